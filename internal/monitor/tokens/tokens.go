// Package tokens reads and makes the monitoring service's tokens file:
// one line per identity, its name and the SHA-256 of its token, so that
// the file admits callers without holding their secrets.
package tokens

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
)

var name = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// File is a loaded tokens file.
type File struct {
	names  []string
	hashes [][]byte
}

// Load reads a tokens file; every malformed line is an error naming it.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the tokens file: %w", err)
	}
	ts := &File{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		hexHash, ok := strings.CutPrefix(f[len(f)-1], "sha256:")
		h, err := hex.DecodeString(hexHash)
		if len(f) != 2 || !name.MatchString(f[0]) || !ok || err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("%s:%d: give NAME sha256:HEX (64 hex digits), as wanlab token NAME --file %s writes", path, n, path)
		}
		ts.names, ts.hashes = append(ts.names, f[0]), append(ts.hashes, h)
	}
	return ts, nil
}

// Names are the names the file admits (none for a nil file).
func (ts *File) Names() []string {
	if ts == nil {
		return nil
	}
	return ts.names
}

// Who is the name whose token this is, or "" (always "" for a nil file).
func (ts *File) Who(token string) string {
	if ts == nil || token == "" {
		return ""
	}
	h := sha256.Sum256([]byte(token))
	who := ""
	for i, want := range ts.hashes {
		// Every entry is compared, in constant time: how long this takes
		// says nothing of which token nearly matched.
		if subtle.ConstantTimeCompare(h[:], want) == 1 {
			who = ts.names[i]
		}
	}
	return who
}

// New makes a random token for an identity's name and the line of a tokens
// file that admits it.
func New(identity string) (token, line string, err error) {
	if !name.MatchString(identity) {
		return "", "", fmt.Errorf("name %q: give 1-64 letters, digits, '.', '_', '@' or '-'", identity)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("making a token: %w", err)
	}
	token = "wl_" + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, identity + " sha256:" + hex.EncodeToString(h[:]), nil
}
