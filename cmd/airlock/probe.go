package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	probepkg "github.com/airlock-mcp/airlock/probe"
	"github.com/airlock-mcp/airlock/upstream"
)

// errWrong makes `airlock probe` exit non-zero when the live API
// contradicts an assumption of the configuration.
var errWrong = errors.New("the live API contradicts the configuration")

// probeOutput is `airlock probe --json`.
type probeOutput struct {
	Resources    []*probepkg.Report `json:"resources"`
	Requests     int                `json:"requests"`
	OK           int                `json:"ok"`
	Wrong        int                `json:"wrong"`
	Unverifiable int                `json:"unverifiable"`
}

func probe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("probe", "probe --config FILE [--fix] [--resource NAME]... [--json] [flags]",
		"Check every assumption of a configuration against the live API, read-only and\nwithin a request budget: each list walked to its end, each filter sent as\ndeclared, items read by id. Exits 1 when an assumption is wrong.")
	configPath := fs.String("config", "", "the configuration `FILE` (YAML)")
	asJSON := fs.Bool("json", false, "print the checks as JSON")
	maxRequests := fs.Int("max-requests", probepkg.DefaultRequests, "the request budget per resource, `N`")
	pageSize := fs.Int("page-size", 0, "the page size, `N`, of the walk to the end (default: small enough to span several pages within the budget)")
	fix := fs.Bool("fix", false, "resolve the file's TODOs and wrong assumptions from what the live API proves, and write them back (each with its evidence as a comment); still read-only toward the API")
	var only stringList
	fs.Var(&only, "resource", "probe only the resource `NAME` (repeatable)")
	if _, err := fs.parse(args, 0, stdout); err != nil {
		return err
	}
	if *configPath == "" {
		return usagef("needs --config FILE")
	}
	if *fix {
		left, err := probeFix(ctx, *configPath, only, *maxRequests, stdout, stderr)
		if err != nil {
			return err
		}
		if left > 0 {
			return fmt.Errorf("%d decision(s) are left as TODO in %s: probe --fix could not prove them", left, *configPath)
		}
	}
	cfg, err := loadConfig(*configPath, "")
	if err != nil {
		return err
	}
	rt, err := upstream.Initialize(ctx, cfg, upstream.Options{Logger: quietLogger()})
	if err != nil {
		return err
	}
	// The report quotes the API (its error messages, values on items):
	// what it prints passes through the runtime's redactor.
	stdout = rt.Redactor.Writer(stdout)
	names := rt.ResourceNames()
	if len(only) > 0 {
		for _, n := range only {
			if rt.Resources[n] == nil {
				return fmt.Errorf("no resource named %q (the configuration has %s)", n, strings.Join(names, ", "))
			}
		}
		names = only
	}
	out := probeOutput{Resources: []*probepkg.Report{}}
	for _, name := range names {
		r := rt.Resources[name]
		var actions []*upstream.Action
		for _, an := range rt.ActionNames() {
			if a := rt.Actions[an]; a.Resource == r {
				actions = append(actions, a)
			}
		}
		rep := probepkg.CheckAssumptions(ctx, r, probepkg.Options{RequestID: "airlock-probe", MaxRequests: *maxRequests, PageSize: *pageSize, Actions: actions})
		// Evidence may quote an upstream or a token endpoint, which may
		// echo a credential.
		for i := range rep.Checks {
			rep.Checks[i].Evidence = rt.Redactor.String(rep.Checks[i].Evidence)
		}
		out.Resources = append(out.Resources, rep)
		out.Requests += rep.Requests
		for _, c := range rep.Checks {
			switch c.Status {
			case probepkg.OK:
				out.OK++
			case probepkg.Wrong:
				out.Wrong++
			default:
				out.Unverifiable++
			}
		}
		if !*asJSON {
			printProbe(stdout, r, rep)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%d ok, %d wrong, %d unverifiable, in %d requests\n", out.OK, out.Wrong, out.Unverifiable, out.Requests)
	}
	if out.Wrong > 0 {
		fmt.Fprintf(stderr, "airlock: %d assumption(s) of %s are wrong against the live API\n", out.Wrong, *configPath)
		return errWrong
	}
	return nil
}

// probeFix runs probe --fix on the file and writes the result back in
// place. It returns how many TODOs are left.
func probeFix(ctx context.Context, path string, only []string, maxRequests int, stdout, stderr io.Writer) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read the configuration: %w", err)
	}
	res, err := probepkg.Fix(ctx, b, probepkg.FixOptions{Resources: only, MaxRequests: maxRequests, Getenv: osGetenv, Logger: quietLogger()})
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(res.YAML, b) {
		if err := writeInPlace(path, res.YAML); err != nil {
			return 0, err
		}
	}
	for _, f := range res.Fixed {
		fmt.Fprintf(stdout, "fixed  %s.%s: %s\n       %s\n", f.Resource, f.Key, f.Value, f.Evidence)
	}
	for _, l := range res.Left {
		fmt.Fprintf(stdout, "TODO   %s\n", l)
	}
	fmt.Fprintf(stderr, "airlock: probe --fix wrote %d value(s) into %s; %d TODO(s) left\n", len(res.Fixed), path, len(res.Left))
	return len(res.Left), nil
}

// writeInPlace replaces a file's content through a temporary file in the
// same directory, keeping its mode, so that a failed write leaves the
// old file whole.
func writeInPlace(path string, b []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write the configuration: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write the configuration: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write the configuration: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the configuration: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write the configuration: %w", err)
	}
	return nil
}

func printProbe(w io.Writer, r *upstream.Resource, rep *probepkg.Report) {
	fmt.Fprintf(w, "resource %s: GET %s, dialect %s, %d requests\n", rep.Resource, r.Config.List.Path, r.Pagination.Dialect, rep.Requests)
	for _, c := range rep.Checks {
		mark := c.Status
		if c.Status == probepkg.Wrong {
			mark = "WRONG"
		}
		fmt.Fprintf(w, "  %-13s %-32s %s\n", mark, c.Check, c.Evidence)
		if c.Hint != "" && c.Status != probepkg.OK {
			fmt.Fprintf(w, "  %-13s %-32s -> %s\n", "", "", c.Hint)
		}
	}
}

// osGetenv is the environment init reads a sample's credential from.
var osGetenv = os.Getenv
