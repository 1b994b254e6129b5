package command

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

func TestExpandPlaceholders(t *testing.T) {
	dir := func(h string) string { return "/data/" + h }
	addr := func(h string) string { return map[string]string{"server": "10.0.0.1", "c1": "10.0.0.2"}[h] }
	got := ExpandPlaceholders("http://{addr:server}:8080/ from {addr} in {dir} {left}", "c1", dir, addr)
	if want := "http://10.0.0.1:8080/ from 10.0.0.2 in /data/c1 {left}"; got != want {
		t.Errorf("expanded %q, want %q", got, want)
	}
}

// fakeEnv runs programs on this machine, every host's data directory dir.
type fakeEnv struct {
	dir   string
	files kind.Files
	mu    sync.Mutex
	want  int
	done  []job.Record
}

func (e *fakeEnv) Addr(host string) string { return "10.0.0." + strings.TrimPrefix(host, "h") }
func (e *fakeEnv) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}
func (e *fakeEnv) Files() kind.Files                  { return e.files }
func (e *fakeEnv) Expect(n int)                       { e.mu.Lock(); e.want += n; e.mu.Unlock() }
func (e *fakeEnv) Done(r job.Record)                  { e.mu.Lock(); e.done = append(e.done, r); e.mu.Unlock() }
func (e *fakeEnv) Seed() uint64                       { return 1 }
func (e *fakeEnv) ID() string                         { return "step0" }
func (e *fakeEnv) Token() token.Token                 { return token.Token{} }
func (e *fakeEnv) Bottleneck(from, to string) float64 { return 0 }
func (e *fakeEnv) Start(context.Context, string, string, string, kind.RoleSpec, bool) (kind.Started, error) {
	return nil, errors.New("no agents in this test")
}

// fakeFiles records the files made; the server listens once it runs.
type fakeFiles struct {
	dir  string
	made map[string]string
}

func (f *fakeFiles) DataDir(host string) (string, error) { return f.dir, nil }
func (f *fakeFiles) MakeFile(ctx context.Context, host, name string, size int64, text string) error {
	f.made[host+"/"+name] = text
	return nil
}
func (f *fakeFiles) Listening(host string, pid, port int) (bool, error) { return pid > 0, nil }

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    Spec
		files   bool
		ok      int
		status  []string
		wantErr string
	}{
		{name: "clients ok and failed", files: true,
			spec: Spec{Files: []File{{Host: "h1", Name: "conf", Text: "listen {addr}:80 in {dir}"}},
				Server:  &Program{Host: "h1", Run: []string{"sleep", "60"}, Ready: 80},
				Clients: []Program{{Host: "h2", Run: []string{"true"}}, {Host: "h2", Run: []string{"sh", "-c", "echo no such page; exit 22"}}},
				Timeout: time.Minute},
			status: []string{job.OK, job.Failed}, wantErr: "client 2 on h2 (sh): exit status 22: no such page"},
		{name: "a client times out", files: true,
			spec:   Spec{Clients: []Program{{Host: "h2", Run: []string{"sleep", "60"}}}, Timeout: 100 * time.Millisecond},
			status: []string{job.Timeout}, wantErr: "still running after 100ms"},
		{name: "no data directories here", spec: Spec{Clients: []Program{{Host: "h2", Run: []string{"true"}}}, Timeout: time.Minute},
			wantErr: "runs in emulated hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := &fakeFiles{dir: t.TempDir(), made: map[string]string{}}
			env := &fakeEnv{}
			if tc.files {
				env.files = files
			}
			o, err := Kind.Run(context.Background(), env, &tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
			if len(tc.status) == 0 {
				return
			}
			if o == nil || len(o.Jobs) != len(tc.status) || len(env.done) != len(tc.status) || env.want != len(tc.status) {
				t.Fatalf("outcome %+v, %d jobs done of %d expected", o, len(env.done), env.want)
			}
			for i, s := range tc.status {
				if o.Jobs[i].Status != s {
					t.Errorf("job %d: %s, want %s", i+1, o.Jobs[i].Status, s)
				}
			}
			if o.Metrics["jobs"] != float64(len(tc.status)) {
				t.Errorf("figures %v", o.Metrics)
			}
			if got := files.made["h1/conf"]; len(tc.spec.Files) > 0 && got != "listen 10.0.0.1:80 in "+files.dir {
				t.Errorf("made %q", got)
			}
		})
	}
}

func TestRunRefusesAnotherSpec(t *testing.T) {
	var other struct{ kind.Spec }
	if _, err := Kind.Run(context.Background(), &fakeEnv{}, other); err == nil {
		t.Error("ran a spec of another kind")
	}
}
