package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestDeployImage builds the agent's image as make image does, from the
// static binary, and checks what is in it: that binary alone, run as an
// unprivileged user. (This machine's container runtime may not run
// containers; the image's content is what is checked.)
func TestDeployImage(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "podman")
	ctxDir := t.TempDir()
	bin, _ := os.ReadFile(wanlabBin)
	os.WriteFile(filepath.Join(ctxDir, "wanlab-static"), bin, 0o755)
	cf, err := os.ReadFile("../deploy/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ctxDir, "Containerfile"), cf, 0o644)
	tag := "localhost/wanlab-agent-e2e:" + filepath.Base(ctxDir)
	if out, err := exec.Command("podman", "build", "--quiet", "--tag", tag, ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("podman build: %v: %s", err, out)
	}
	defer exec.Command("podman", "rmi", "--force", tag).Run()
	out, err := exec.Command("podman", "image", "inspect", tag, "--format", "{{.Config.Entrypoint}} {{.Config.User}} {{len .RootFS.Layers}}").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "[/wanlab agent] 65532:65532 1" {
		t.Errorf("image config %q (%v), want entrypoint [/wanlab agent], user 65532:65532, one layer", got, err)
	}
	id, err := exec.Command("podman", "create", tag).Output()
	if err != nil {
		t.Fatalf("podman create: %v", err)
	}
	cid := strings.TrimSpace(string(id))
	defer exec.Command("podman", "rm", "--force", cid).Run()
	export, err := exec.Command("podman", "export", cid).Output()
	if err != nil {
		t.Fatalf("podman export: %v", err)
	}
	var files []string
	tr := tar.NewReader(bytes.NewReader(export))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		files = append(files, h.Name)
		if h.Name == "wanlab" {
			b, _ := io.ReadAll(tr)
			if sha256.Sum256(b) != sha256.Sum256(bin) {
				t.Error("the image's /wanlab is not the static binary")
			}
		}
	}
	if strings.Join(files, ",") != "wanlab" {
		t.Errorf("the image holds %v, want the binary alone", files)
	}
}

// TestDeploySystemdUnit verifies the agent's unit with systemd and checks
// its hardening score.
func TestDeploySystemdUnit(t *testing.T) {
	testsupport.Need(t, "systemd")
	unit, err := os.ReadFile("../deploy/systemd/wanlab-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "wanlab-agent.service")
	os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/wanlab "), []byte(wanlabBin+" ")), 0o644)
	if out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput(); err != nil || bytes.Contains(out, []byte("wanlab-agent.service")) {
		t.Errorf("systemd-analyze verify: %v: %s", err, out)
	}
	// The overall exposure, 0 (none) to 10, times 10: at most 2.0.
	out, err := exec.Command("systemd-analyze", "security", "--offline=true", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: %v: %s", err, out[max(0, len(out)-300):])
	}
	agentFlags(t, string(unit))
}

// TestDeployKubernetes checks the manifests: a DaemonSet on the host
// network with every capability dropped, flags the agent has, and a
// policy it accepts.
func TestDeployKubernetes(t *testing.T) {
	f, err := os.ReadFile("../deploy/kubernetes/wanlab-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(f))
	kinds := map[string]map[string]any{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		kinds[doc["kind"].(string)] = doc
	}
	for _, k := range []string{"Namespace", "Secret", "ConfigMap", "DaemonSet", "Service"} {
		if kinds[k] == nil {
			t.Errorf("no %s", k)
		}
	}
	pod := dig(kinds["DaemonSet"], "spec", "template", "spec").(map[string]any)
	if pod["hostNetwork"] != true {
		t.Error("the DaemonSet is not on the host network: tests would measure the pod network")
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	sc := c["securityContext"].(map[string]any)
	if sc["allowPrivilegeEscalation"] != false || sc["readOnlyRootFilesystem"] != true || dig(sc, "capabilities", "drop").([]any)[0] != "ALL" {
		t.Errorf("container security context %v", sc)
	}
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	agentFlags(t, strings.Join(args, " "))
	pol := dig(kinds["ConfigMap"], "data", "policy.yaml").(string)
	if _, err := policy.Parse("configmap policy.yaml", []byte(pol), limits.Default); err != nil {
		t.Errorf("the ConfigMap's policy: %v", err)
	}
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		v = v.(map[string]any)[k]
	}
	return v
}

// agentFlags finds the --flags in text and checks that wanlab agent has them.
func agentFlags(t *testing.T, text string) []string {
	t.Helper()
	help := wanlab(t, "agent", "--help").stdout
	var flags []string
	for _, f := range strings.Fields(text) {
		name, ok := strings.CutPrefix(f, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		flags = append(flags, name)
		if !strings.Contains(help, "--"+name+" ") {
			t.Errorf("wanlab agent has no flag --%s", name)
		}
	}
	return flags
}
