package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/token"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// eventually polls until cond holds, for at most limit, and says whether it did.
func eventually(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// namesWithPrefix lists the names of dir that start with prefix.
func namesWithPrefix(dir, prefix string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			names = append(names, e.Name())
		}
	}
	return names
}

// directIO says whether dir's file system takes O_DIRECT (tmpfs does not).
func directIO(t *testing.T, dir string) bool {
	t.Helper()
	name := filepath.Join(dir, "direct-probe")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|unix.O_DIRECT, 0o600)
	if errors.Is(err, unix.EINVAL) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Remove(name)
	return true
}

// sizeOf is the size of the first file of dir named with prefix, -1 if
// there is none.
func sizeOf(dir, prefix string) int64 {
	for _, name := range namesWithPrefix(dir, prefix) {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return fi.Size()
		}
	}
	return -1
}

// TestFileWorkEndsWithItsCaller: a disk test went on writing for 8 s after
// its controller was killed, and SendFile's generated file was made whole
// however long that took. Both end, and their files go, within a block of
// the call's end. A call that went on would be seen growing its file, and
// its file is bounded (1 GiB) so that it cannot fill the disk.
func TestFileWorkEndsWithItsCaller(t *testing.T) {
	const size = 1 << 30
	// grows is how much a file may grow after its call ended: a few
	// blocks.
	const grows = 64 << 20
	for _, tc := range []struct {
		name   string
		prefix string // of the file the call makes
		call   func(context.Context, *agentapi.Client, bool) error
	}{
		// In 4 KiB direct writes, or where the file system has no
		// O_DIRECT in 1 MiB blocks synced as they go.
		{"disk", "wanlab-disk-", func(ctx context.Context, c *agentapi.Client, direct bool) error {
			req := &agentpb.DiskRequest{Size: size, Block: 4096, Direct: true}
			if !direct {
				req = &agentpb.DiskRequest{Size: size, Block: 1 << 20, Fsync: true}
			}
			_, err := c.Disk(ctx, req)
			return err
		}},
		{"generated file", "generated-", func(ctx context.Context, c *agentapi.Client, _ bool) error {
			_, err := c.SendFile(ctx, &agentpb.SendFileRequest{Spec: transfer.SpecToPB(transfer.Spec{Streams: 1, Block: 1 << 20}),
				Size: size, Address: "127.0.0.1:1", Token: token.New().Bytes()})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, data := serve(t, limits.Default)
			direct := directIO(t, data)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			called := make(chan error, 1)
			go func() { called <- tc.call(ctx, c, direct) }()
			if !eventually(10*time.Second, func() bool { return len(namesWithPrefix(data, tc.prefix)) > 0 }) {
				select {
				case err := <-called:
					t.Fatalf("the call ended before its file appeared: %v", err)
				default:
					t.Fatalf("no %s* file appeared in %s", tc.prefix, data)
				}
			}
			cancel()
			at := max(sizeOf(data, tc.prefix), 0)
			largest := at
			gone := eventually(3*time.Second, func() bool {
				n := sizeOf(data, tc.prefix)
				largest = max(largest, n)
				return n < 0
			})
			if largest > at+grows {
				t.Errorf("the file grew from %d to %d bytes after its caller left", at, largest)
			}
			if !gone {
				t.Errorf("3 s after its caller left, the agent still has %v", namesWithPrefix(data, tc.prefix))
			}
		})
	}
}

// workloadCall is a Workload call's stream seen from the agent, for a
// caller of the test's: only Context and Send are used.
type workloadCall struct {
	agentpb.Agent_WorkloadServer
	ctx    context.Context
	events chan *agentpb.WorkloadEvent
}

func (w *workloadCall) Context() context.Context { return w.ctx }

func (w *workloadCall) Send(e *agentpb.WorkloadEvent) error {
	select {
	case w.events <- e:
	default:
	}
	return nil
}

// fromIdentity is ctx of a call over TLS from the controller whose
// certificate's common name is cn.
func fromIdentity(ctx context.Context, cn string) context.Context {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	return peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}}})
}

// TestMeshFoldersAreEachIdentitys: two identities allowed mesh with
// share: true and the same id wrote into one folder, mesh-ID, and the
// first to end removed it while the other ran. Each identity's node has a
// folder of its own, which only its end removes.
func TestMeshFoldersAreEachIdentitys(t *testing.T) {
	dir := t.TempDir()
	data, err := datadir.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	s := &Server{Host: "h", Limits: limits.Default, Data: data, Test: bind.Local{Addr: "127.0.0.1"}}
	s.streams.max = s.Limits.MaxStreams
	spec, _ := json.Marshal(mesh.Node{Disk: true, NodeSpec: mesh.NodeSpec{Peers: []mesh.Peer{{Name: "p", Address: "127.0.0.1:1", Weight: 1}},
		Sizes: []int64{1 << 20}, Streams: 1, MaxWait: time.Second, Duration: time.Minute, Token: token.New()}})
	type node struct {
		stop  context.CancelFunc
		ended chan error
	}
	end := func(n node) error {
		n.stop()
		select {
		case err := <-n.ended:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("it did not end 10 s after its call")
		}
	}
	start := func(cn string) node {
		ctx, stop := context.WithCancel(fromIdentity(context.Background(), cn))
		call := &workloadCall{ctx: ctx, events: make(chan *agentpb.WorkloadEvent, 16)}
		n := node{stop: stop, ended: make(chan error, 1)}
		go func() {
			n.ended <- workloadCalls{s}.Workload(&agentpb.WorkloadRequest{Id: "shared", Role: mesh.RoleNode, SpecJson: spec}, call)
		}()
		select {
		case e := <-call.events:
			if e.GetListening() == nil {
				t.Fatalf("%s's node: %v, want it listening", cn, e)
			}
		case err := <-n.ended:
			t.Fatalf("%s's node: %v", cn, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's node did not start", cn)
		}
		return n
	}
	alice := start("alice")
	defer alice.stop()
	bob := start("bob")
	defer bob.stop()
	folders := namesWithPrefix(data.Path(), "mesh-")
	if len(folders) != 2 {
		t.Fatalf("two identities' nodes of one mesh id have folders %v, want one each", folders)
	}
	for _, f := range folders {
		if strings.Contains(f, "shared") {
			t.Errorf("folder %s carries the caller's id", f)
		}
	}
	if err := end(bob); err != nil {
		t.Fatalf("bob's node: %v", err)
	}
	left := namesWithPrefix(data.Path(), "mesh-")
	if len(left) != 1 {
		t.Fatalf("after bob's node ended the folders are %v, want alice's alone", left)
	}
	if _, err := os.Stat(filepath.Join(data.Path(), left[0], "mesh-source")); err != nil {
		t.Errorf("alice's node lost its source file when bob's ended: %v", err)
	}
	if err := end(alice); err != nil {
		t.Fatalf("alice's node: %v", err)
	}
	if left := namesWithPrefix(data.Path(), "mesh-"); len(left) != 0 {
		t.Errorf("after both nodes ended the folders are %v", left)
	}
}

// TestKeptNamesAre128Bit: the files an agent names were 64-bit random
// (docs: 128), and a kept file may be sent by whoever knows its name.
func TestKeptNamesAre128Bit(t *testing.T) {
	a, _ := serve(t, limits.Default)
	b, _ := serve(t, limits.Default)
	if kept := sendKept(t, a, b, 1, 1000); !regexp.MustCompile(`^received-[0-9a-f]{32}$`).MatchString(kept) {
		t.Errorf("kept file %q, want received- and 128 random bits in hex", kept)
	}
}
