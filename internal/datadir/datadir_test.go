package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wanlab/wanlab/internal/testsupport"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"received-3f9a", true}, {"step0-node1", true}, {"a.b_c-d", true},
		{"", false}, {".", false}, {"..", false}, {".hidden", false}, {"-flag", false},
		{"x/../../../../victim", false}, {"/etc/passwd", false}, {"a b", false}, {"a\x00b", false},
		{"a\nb", false}, {strings.Repeat("a", 129), false},
	} {
		if err := ValidName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestOpenMakesAPrivateFolder: whatever the umask, a new data folder is 0700.
func TestOpenMakesAPrivateFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", p, fi.Mode().Perm(), err)
		}
	}
	f, err := d.Create("received-1")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, _ := os.Stat(filepath.Join(path, "received-1")); fi.Mode().Perm() != 0o600 {
		t.Errorf("a file of the folder is %v, want 0600", fi.Mode().Perm())
	}
}

// TestUnsafeFoldersAreRefused: a folder others can write, a link, or one
// another user made first (as with /var/tmp/wanlab) is never used.
func TestUnsafeFoldersAreRefused(t *testing.T) {
	dir := t.TempDir()
	writable := filepath.Join(dir, "writable")
	os.Mkdir(writable, 0o777)
	os.Chmod(writable, 0o777)
	if _, err := Open(filepath.Join(writable, "data")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a folder under a world-writable one: %v, want ErrUnsafe", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(dir, link)
	if _, err := Open(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a data folder that is a symbolic link: %v, want ErrUnsafe", err)
	}
	sticky := filepath.Join(dir, "sticky")
	os.Mkdir(sticky, 0o777)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	if d, err := Open(filepath.Join(sticky, "data")); err != nil {
		t.Errorf("a folder of its own under a sticky one (as /tmp): %v", err)
	} else {
		d.Close()
	}

	testsupport.NeedRoot(t)
	// Another user made the folder first: it is theirs, whatever its mode.
	theirs := filepath.Join(dir, "theirs")
	os.Mkdir(theirs, 0o700)
	os.Chown(theirs, 65534, 65534)
	if _, err := Open(theirs); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a folder that belongs to another user: %v, want ErrUnsafe", err)
	}
	if _, err := Open(filepath.Join(theirs, "data")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a folder under another user's: %v, want ErrUnsafe", err)
	}
}

// TestFilesStayBeneath: no name or link leads out of the folder.
func TestFilesStayBeneath(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("root only"), 0o600)
	d, err := Open(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	os.Symlink(secret, filepath.Join(d.Path(), "link"))
	os.Symlink("../../", filepath.Join(d.Path(), "up"))
	for _, name := range []string{"link", "../secret", "up", secret} {
		if f, err := d.OpenFile(name, os.O_RDONLY); err == nil {
			f.Close()
			t.Errorf("opened %q from the data folder", name)
		}
	}
	if _, err := d.Sub("up"); err == nil {
		t.Error("a link to a folder outside was taken as a sub-folder")
	}
	if err := d.Remove("../secret"); err == nil {
		t.Error("removed a file outside")
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("the file outside is gone: %v", err)
	}
}
