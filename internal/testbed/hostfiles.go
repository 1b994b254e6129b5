package testbed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/workload/diskio"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

var _ backend.HostFiles = (*Bed)(nil)

// MakeFile makes a file in a host's data directory, never through a link
// (what runs in the host could have left one there): text when size is
// 0, else size bytes of generated data, dropped from the page cache.
func (b *Bed) MakeFile(ctx context.Context, host, name string, size int64, text string) error {
	dir, err := b.DataDir(host)
	if err != nil {
		return err
	}
	return makeFile(ctx, dir, name, size, text)
}

func makeFile(ctx context.Context, dir, name string, size int64, text string) error {
	d, err := datadir.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	out, err := d.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	if err != nil {
		return err
	}
	if size == 0 {
		_, err := out.WriteString(text)
		return errors.Join(err, out.Close())
	}
	err = transfer.MakeFile(ctx, out, size)
	if err == nil {
		err = out.Sync()
	}
	if err == nil {
		err = diskio.DropCached(out)
	}
	return errors.Join(err, out.Close())
}

// Listening says whether process pid, in host, has a TCP socket listening
// on port, as its namespace's /proc/PID/net/tcp and tcp6 say.
func (b *Bed) Listening(host string, pid, port int) (bool, error) {
	if _, err := b.state.Host(host); err != nil {
		return false, err
	}
	return listening(pid, port)
}

// listening reads /proc/PID/net/tcp and tcp6 (the process's namespace's
// sockets) for one listening on port.
func listening(pid, port int) (bool, error) {
	want := fmt.Sprintf(":%04X", port)
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "net", name))
		if err != nil {
			if name == "tcp6" {
				continue
			}
			return false, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			// sl local_address rem_address st ...; 0A is LISTEN.
			if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "0A" {
				return true, nil
			}
		}
	}
	return false, nil
}
