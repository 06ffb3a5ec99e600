module github.com/airlock-mcp/airlock

go 1.26

require github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
