package draft

import "testing"

// TestSnake_NamesReadTheWayAPersonWritesThem: acronyms stay whole with
// their plural, and a sign before a number is spelled, so that names stay
// readable and distinct.
func TestSnake_NamesReadTheWayAPersonWritesThem(t *testing.T) {
	for in, want := range map[string]string{
		"APIs":                    "apis",
		"listAPIs":                "list_apis",
		"outbound IPs":            "outbound_ips",
		"OutboundIPs":             "outbound_ips",
		"getOutboundIPsForRepo":   "get_outbound_ips_for_repo",
		"HTTPServer":              "http_server",
		"listRepoSSHKeys":         "list_repo_ssh_keys",
		"issues/list-for-repo":    "issues_list_for_repo",
		"createdAt":               "created_at",
		"+1":                      "plus_1",
		"-1":                      "minus_1",
		"thumbs-up":               "thumbs_up",
		"v2":                      "v2",
		"ipAddress":               "ip_address",
		"URLs":                    "urls",
		"IDsAndNames":             "ids_and_names",
		"listAppsV1DeploymentFor": "list_apps_v1_deployment_for",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}
