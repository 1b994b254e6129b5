package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// AuditLog writes an agent's audit entries as JSON lines, to a file
// (appended, 0600, reopened on Reopen for log rotation) or a stream.
type AuditLog struct {
	path string
	mu   sync.Mutex
	w    io.Writer
	f    *os.File
	// Failed counts entries that could not be written.
	Failed int
}

// OpenAudit opens the audit log at path; "-" is standard error (the
// journal, under systemd).
func OpenAudit(path string) (*AuditLog, error) {
	a := &AuditLog{path: path}
	if path == "-" {
		a.w = os.Stderr
		return a, nil
	}
	return a, a.Reopen()
}

// Reopen opens the file again, as log rotation needs.
func (a *AuditLog) Reopen() error {
	if a.path == "-" {
		return nil
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening the audit log: %w", err)
	}
	a.mu.Lock()
	old := a.f
	a.f, a.w = f, f
	a.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Write appends one entry.
func (a *AuditLog) Write(e AuditEntry) {
	b, err := json.Marshal(e)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		_, err = a.w.Write(append(b, '\n'))
	}
	if err != nil {
		a.Failed++
	}
}

// Close closes the file.
func (a *AuditLog) Close() error {
	if a.f == nil {
		return nil
	}
	return a.f.Close()
}
