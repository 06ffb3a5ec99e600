package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/write"
)

// errDrift makes `airlock contract` exit non-zero: usable as a release gate.
var errDrift = errors.New("contract drift")

func contract(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("contract", "contract (--config FILE [--fixtures DIR] | --demo) [--live] [flags]",
		"Check recorded upstream answers (versioned fixtures) against the configuration's\ndecision-field contracts and, with --live, one page of every resource of the\nreal API (read-only). Exits 1 on drift: usable as a release gate.")
	configPath := fs.String("config", "", "the configuration `FILE` (YAML)")
	demoMode := fs.Bool("demo", false, "use the demo configuration, its fixtures and (with --live) the demo API")
	fixtureDir := fs.String("fixtures", "", "the `DIR` of versioned fixtures (default: contracts/ next to the configuration)")
	live := fs.Bool("live", false, "also read one small page of every resource from the real upstream (read-only)")
	pageSize := fs.Int("page-size", 20, "items per resource with --live, `N`")
	if _, err := fs.parse(args, 0, stdout); err != nil {
		return err
	}
	if *demoMode && *configPath != "" {
		return usagef("use --config or --demo, not both")
	}
	var cfg *config.Config
	var fxs []fixtures.ContractFixture
	var err error
	getenv := os.Getenv
	switch {
	case *demoMode:
		base := "http://127.0.0.1:1"
		if *live {
			api := httptest.NewServer(&fixtures.Server{})
			defer api.Close()
			base = api.URL
		}
		if cfg, err = loadConfig("", base); err != nil {
			return err
		}
		fxs, err = fixtures.ContractFixtures()
		getenv = demoEnv
	case *configPath != "":
		if cfg, err = loadConfig(*configPath, ""); err != nil {
			return err
		}
		dir := *fixtureDir
		if dir == "" {
			dir = filepath.Join(filepath.Dir(*configPath), "contracts")
		}
		if _, statErr := os.Stat(dir); statErr == nil {
			fxs, err = fixtures.LoadContractFixtures(dir)
		} else if !*live {
			return fmt.Errorf("no fixtures at %s: pass --fixtures DIR, or --live to probe the upstream", dir)
		}
	default:
		return usagef("needs --config FILE or --demo")
	}
	if err != nil {
		return err
	}
	if !*live {
		// Offline: no request is made, so a missing credential is fine.
		real := getenv
		getenv = func(k string) string {
			if v := real(k); v != "" {
				return v
			}
			return "offline"
		}
	}
	rt, err := upstream.Initialize(ctx, cfg, upstream.Options{Getenv: getenv, Logger: quietLogger()})
	if err != nil {
		return err
	}
	drift, unchecked := 0, 0
	if len(fxs) > 0 {
		fmt.Fprintf(stdout, "recorded answers (%d fixtures):\n", len(fxs))
	}
	for _, f := range fxs {
		d, err := write.DecideFixture(rt, f.Resource, f.Operation, read.RecordedResponse(f.Response.Status, f.Response.Headers, f.BodyBytes()))
		label := fmt.Sprintf("%s %s v%d", f.Resource, f.Operation, f.Version)
		switch {
		case err != nil:
			// A recorded answer the configuration can no longer judge
			// (its resource or action is gone) is not a pass.
			unchecked++
			fmt.Fprintf(stdout, "  UNCHECKED %-37s %v\n", label, err)
		case d.Decision != f.Expect.Decision:
			drift++
			fmt.Fprintf(stdout, "  DRIFT    %-38s %s, recorded %s%s\n", label, d.Decision, f.Expect.Decision, because(d.Details))
		default:
			fmt.Fprintf(stdout, "  ok       %-38s %s%s\n", label, d.Decision, because(d.Details))
		}
	}
	if *live {
		fmt.Fprintf(stdout, "live upstream (one page of %d items per resource, read-only):\n", *pageSize)
		for _, name := range rt.ResourceNames() {
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			d := read.Probe(pctx, rt.Resources[name], "contract-check", *pageSize)
			cancel()
			mark := "ok     "
			if d.Decision == read.DecideRefuse || d.Decision == read.DecideStop {
				mark = "DRIFT  "
				drift++
			}
			fmt.Fprintf(stdout, "  %s %-38s %s%s\n", mark, name, d.Decision, because(d.Details))
		}
	}
	if unchecked > 0 {
		fmt.Fprintf(stdout, "%d fixture(s) could not be checked against this configuration: update or remove them\n", unchecked)
	}
	if drift > 0 {
		fmt.Fprintf(stdout, "%d contract(s) drifted: decisions that rest on these answers would be refused or stopped\n", drift)
	}
	if drift > 0 || unchecked > 0 {
		return errDrift
	}
	fmt.Fprintln(stdout, "no drift")
	return nil
}

func because(details []string) string {
	if len(details) == 0 {
		return ""
	}
	return ": " + strings.Join(details, "; ")
}
