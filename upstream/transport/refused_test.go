package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mcp/airlock/internal/oauthtest"
)

// declaredExpired is an upstream's refusal of a credential that is not a
// 401: DynamoDB's 400 naming ExpiredTokenException.
const declaredExpired = "unauthorized: [{status: 400, member: __type, match: ExpiredTokenException}]"

// refuse400 answers a declared refusal whose message quotes the
// request's Authorization header, as AWS's answers do.
func refuse400(w http.ResponseWriter, r *http.Request, typ string) {
	msg, _ := json.Marshal("The security token included in the request is invalid. Authorization: " + r.Header.Get("Authorization") +
		" X-Amz-Security-Token: " + r.Header.Get("X-Amz-Security-Token"))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"__type":"com.amazonaws#%s","message":%s}`, typ, msg)
}

// TestDeclaredRefusal_DropsTheAccessTokenAndRepeatsTheRead: an answer the
// upstream declares a refused credential is a 401 in every way: the
// access token it was sent with is dropped and the read is sent once more
// with a new one.
func TestDeclaredRefusal_DropsTheAccessTokenAndRepeatsTheRead(t *testing.T) {
	te := &oauthtest.TokenEndpoint{}
	var hits atomic.Int64
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-1-") {
			refuse400(w, r, "ExpiredTokenException")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	c, base := oauthClient(t, te, api, declaredExpired, "", Options{})
	resp, err := get(t, c, base.URL)
	if err != nil {
		t.Fatalf("a read refused by a declared 400 is repeated with a new token: %v", err)
	}
	if resp.Status != 200 || te.Requests.Load() != 2 || hits.Load() != 2 {
		t.Fatalf("status %d, %d token requests, %d API requests; want 200, 2, 2", resp.Status, te.Requests.Load(), hits.Load())
	}
}

// TestDeclaredRefusal_EndsTheSessionAndLogsInAgain: a session whose token
// the API refuses with a declared 400 logs in again, as after a 401.
func TestDeclaredRefusal_EndsTheSessionAndLogsInAgain(t *testing.T) {
	var logins, hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/login" {
			fmt.Fprintf(w, `{"token":"session-token-%d-0123456789"}`, logins.Add(1))
			return
		}
		hits.Add(1)
		if r.Header.Get("Authorization") == "session-token-1-0123456789" {
			refuse400(w, r, "ExpiredTokenException")
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, declaredExpired+"\n"+
		`credential: {session: {secrets: {password: {env: TEST_TOKEN}}, steps: [{name: auth, method: POST, path: /login, json: {password: "{{secrets.password}}"}, capture: {token: token}}], header: {name: Authorization, value: "{{auth.token}}"}}}`,
		Options{})
	resp, err := get(t, c, srv.URL)
	if err != nil {
		t.Fatalf("a read refused by a declared 400 logs in again and is repeated: %v", err)
	}
	if resp.Status != 200 || logins.Load() != 2 || hits.Load() != 2 {
		t.Fatalf("status %d, %d logins, %d API requests; want 200, 2, 2", resp.Status, logins.Load(), hits.Load())
	}
}
