package read

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
)

// getURL is the URL that reads one item: get.path with the id escaped as
// one path segment where the path names it, and as one query value where
// its query does (MediaWiki's /api.php?action=query&pageids={{id}}).
func getURL(r *upstream.Resource, id string) (*url.URL, error) {
	path, q, err := template.Vars{ID: id}.RenderURL(r.Config.Get.Path)
	if err != nil {
		return nil, err
	}
	return r.Upstream.ResolveURL(nil, path, q), nil
}

// missingItem reports an item the answer says does not exist
// (get.missing true), though it holds the id that was asked for.
func missingItem(g *config.GetConfig, item map[string]any) bool {
	if g.Missing == "" {
		return false
	}
	v, ok := jsonvalue.Get(item, g.Missing)
	return ok && v == true
}
