package testsupport

import (
	"net/http"
	"testing"
)

// HostStatus is the status of a GET of url sent with the Host header host
// ("" for the URL's own), as a DNS-rebinding page's request would send it.
func HostStatus(t testing.TB, url, host string) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
