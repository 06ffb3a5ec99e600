// Command pocketbase is an unmodified PocketBase server, built from the
// upstream module so that airlock's interop tests can run against a real
// PocketBase: it adds no hooks, collections or routes of its own.
package main

import (
	"log"

	"github.com/pocketbase/pocketbase"
)

func main() {
	app := pocketbase.New()
	if err := app.Start(); err != nil {
		log.Fatal(err)
	}
}
