package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// SNMP credentials of the private snmpd.
const (
	SNMPCommunity = "wanlab-test"
	SNMPUser      = "wanlabv3"
	SNMPAuthPass  = "auth-secret-1"
	SNMPPrivPass  = "priv-secret-1"
)

// Snmpd starts a private snmpd for the test on a free loopback UDP port,
// answering v2c to SNMPCommunity and v3 to SNMPUser (SHA and AES), and
// returns its host:port. It reports this machine's interfaces.
func Snmpd(t testing.TB) string {
	t.Helper()
	bin, in := newServer(t, "snmpd")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	conf := filepath.Join(in.dir, "snmpd.conf")
	text := fmt.Sprintf(`agentAddress udp:%s
rocommunity %s 127.0.0.1
createUser %s SHA "%s" AES "%s"
rouser %s priv
[snmp] persistentDir %s
`, addr, SNMPCommunity, SNMPUser, SNMPAuthPass, SNMPPrivPass, SNMPUser, in.dir)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// -f: foreground; -C: this configuration only; -Lf: log to a file.
	cmd := exec.Command(bin, "-f", "-C", "-c", conf, "-Lf", filepath.Join(in.dir, "snmpd.log"), "-p", filepath.Join(in.dir, "snmpd.pid"))
	cmd.Env = append(os.Environ(), "SNMP_PERSISTENT_DIR="+in.dir, "MIBS=")
	if err := in.start(cmd); err != nil {
		t.Fatal(err)
	}
	// Ready once snmpget answers.
	get, _ := exec.LookPath("snmpget")
	err = in.waitFor(20*time.Second, func() error {
		if get == "" {
			time.Sleep(time.Second)
			return nil
		}
		return exec.Command(get, "-v2c", "-c", SNMPCommunity, "-t", "1", "-r", "0", addr, ".1.3.6.1.2.1.1.3.0").Run()
	})
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
