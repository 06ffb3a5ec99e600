package draft

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

// TestDraftFromSample_ADynamoDBScanDraftsItsWholeShape: a Scan sampled as
// DynamoDB takes it (a POST naming its operation in X-Amz-Target, answered
// in application/x-amz-json-1.0 with typed attributes and a
// LastEvaluatedKey) drafts every part of it: the headers, the media type,
// the typed items read through their encoding (a number past 2^53 an
// integer, exactly), the continuation object sent back whole as
// ExclusiveStartKey, and the table's key as LastEvaluatedKey names it. A
// page that held the whole table drafts the same continuation and asks for
// the key, never guessing it from a field's name. Both drafts parse once
// their TODOs are decided.
func TestDraftFromSample_ADynamoDBScanDraftsItsWholeShape(t *testing.T) {
	item := `{"pk": {"S": "acct-00100"}, "status": {"S": "active"}, "version": {"N": "3"}, "big": {"N": "9007199254740993"}, "owner": {"NULL": true}, "tags": {"SS": ["a", "b"]}}`
	for _, tc := range []struct{ name, answer, note, id string }{
		{"a_page_that_continues", `{"Items": [` + item + `], "Count": 1, "ScannedCount": 25, "LastEvaluatedKey": {"pk": {"S": "acct-00100"}}}`, "sent back whole as ExclusiveStartKey", "id_field: pk"},
		{"a_page_that_held_the_table", `{"Items": [` + item + `], "Count": 1, "ScannedCount": 1}`, "the sampled page held the whole table", `id_field: "TODO(the table's key attribute`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var target, ctype, auth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				target, ctype, auth = r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"), r.Header.Get("Authorization")
				_, _ = io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			h := http.Header{}
			h.Set("X-Amz-Target", "DynamoDB_20120810.Scan")
			h.Set("Content-Type", "application/x-amz-json-1.0")
			d, err := FromSample(t.Context(), srv.URL+"/", SampleOptions{Options: Options{Environment: "test", Resources: []string{"accounts"}},
				Body: []byte(`{"TableName": "accounts", "Limit": 25}`), Headers: h,
				SigV4: &SampleSigV4{Region: "eu-west-1", Service: "dynamodb"}, Getenv: func(k string) string {
					return map[string]string{SigV4KeyEnv: "AKIDSAMPLE", SigV4SecretEnv: "sample-secret-not-drafted"}[k]
				}})
			if err != nil {
				t.Fatal(err)
			}
			if target != "DynamoDB_20120810.Scan" || ctype != "application/x-amz-json-1.0" {
				t.Errorf("the sample went with X-Amz-Target %q and Content-Type %q", target, ctype)
			}
			if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDSAMPLE/") || !strings.Contains(auth, "/eu-west-1/dynamodb/aws4_request") || !strings.Contains(auth, "x-amz-target") {
				t.Errorf("the sample was not signed for eu-west-1/dynamodb with its operation: %q", auth)
			}
			y := string(d.YAML)
			if strings.Contains(y, "sample-secret") {
				t.Fatalf("the draft holds the secret:\n%s", y)
			}
			for _, want := range []string{
				"json_media_types: [application/x-amz-json-1.0]",
				"aws_sigv4:", "access_key_id: {env: AWS_ACCESS_KEY_ID}", "secret_access_key: {env: AWS_SECRET_ACCESS_KEY}", "region: eu-west-1", "service: dynamodb",
				"method: POST", `body: {"TableName":"accounts"}`,
				"headers: {Content-Type: application/x-amz-json-1.0, X-Amz-Target: DynamoDB_20120810.Scan}",
				"items: Items",
				"pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 100, evaluated: ScannedCount}",
				"item_encoding: dynamodb",
				"big: {type: integer", "version: {type: integer", "status: {type: string", "tags: {type: array",
				tc.note, tc.id,
			} {
				if !strings.Contains(y, want) {
					t.Errorf("the draft lacks %q:\n%s", want, y)
				}
			}
			// The table's key is named only by LastEvaluatedKey: without
			// one, the draft asks; decided, the draft parses.
			decided := regexp.MustCompile(`id_field: "TODO\([^"]*\)"`).ReplaceAllString(y, "id_field: pk")
			if _, err := config.Parse([]byte(decided)); err != nil {
				t.Errorf("the decided draft does not parse: %v\n%s", err, decided)
			}
		})
	}
	if _, err := FromSample(t.Context(), "http://127.0.0.1:1/", SampleOptions{Headers: http.Header{"Authorization": {"Bearer x"}}}); err == nil || !strings.Contains(err.Error(), "--credential-env") {
		t.Errorf("a credential as a sample header: %v", err)
	}
}
