package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/airlock-mcp/airlock/config/schema"
	"github.com/airlock-mcp/airlock/draft"
)

func initCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("init", "init (--openapi SPEC [--resource NAME|PATH]... [--tag TAG]... | --sample URL) [-o FILE] [flags]",
		"Draft a commented configuration from an OpenAPI 3.0 or 3.1 document (or a\nSwagger 2.0 one, converted), or from a live sample of a list endpoint. A\ndocument's flaws are warnings: the draft keeps what can be read. What it cannot\ndecide is written TODO(...), and every command refuses the file until each is\nresolved; then probe checks it.")
	spec := fs.String("openapi", "", "an OpenAPI 3.0 or 3.1 (or Swagger 2.0) document, `SPEC` (YAML or JSON); external $refs to files resolve next to it")
	remoteRefs := fs.Bool("remote-refs", false, "with --openapi: fetch external $refs to http(s) URLs (without it, such a document is refused)")
	sample := fs.String("sample", "", "the `URL` of a live list endpoint to sample (GET, or POST with --sample-body)")
	sampleBody := fs.String("sample-body", "", "with --sample: a JSON object, `JSON`; the sample is a POST with this body (CouchDB's _find), and so is the drafted list")
	baseURL := fs.String("base-url", "", "the API's base `URL` (default: the document's first server, or the sample's origin)")
	env := fs.String("environment", "", "the environment's `NAME` (default: a TODO)")
	outPath := fs.String("output", "", "write the draft to `FILE` (default: standard output); an existing file is not overwritten")
	fs.alias("o", "output")
	credEnv := fs.String("credential-env", "", "with --sample: the environment variable, `VAR`, holding the credential")
	credHeader := fs.String("credential-header", "", "with --sample: the `HEADER` the credential goes in (default Authorization)")
	credSigV4 := fs.String("credential-sigv4", "", "with --sample: sign the sample with AWS Signature Version 4 for `REGION/SERVICE` (us-east-1/dynamodb), from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; the draft's credential reads the same variables")
	credScheme := fs.String("credential-scheme", "Bearer", "with --sample: the `SCHEME` before the credential (\"\" sends it as is)")
	var resources, tags, sampleHeaders stringList
	fs.Var(&sampleHeaders, "sample-header", "with --sample: a `NAME: VALUE` header sent with the sample and drafted on the list (repeatable; DynamoDB's X-Amz-Target: DynamoDB_20120810.Scan)")
	fs.Var(&resources, "resource", "draft only this list, named by its resource `NAME` or its path (/v1/customers) (repeatable; with --sample, its name); without --resource or --tag, the few lists the document describes best")
	fs.Var(&tags, "tag", "with --openapi: draft the lists the document tags `TAG` (repeatable)")
	if _, err := fs.parse(args, 0, stdout); err != nil {
		return err
	}
	if (*spec == "") == (*sample == "") {
		return usagef("needs exactly one of --openapi SPEC or --sample URL")
	}
	if *sampleBody != "" && *sample == "" {
		return usagef("--sample-body goes with --sample URL")
	}
	if len(sampleHeaders) > 0 && *sample == "" {
		return usagef("--sample-header goes with --sample URL")
	}
	headers := http.Header{}
	for _, h := range sampleHeaders {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(strings.TrimSpace(name), " \t") {
			return usagef("--sample-header %q: write it NAME: VALUE", h)
		}
		headers.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	opts := draft.Options{BaseURL: *baseURL, Resources: resources, Tags: tags, Environment: *env}
	var d *draft.Draft
	var err error
	switch {
	case *spec != "":
		b, readErr := os.ReadFile(*spec)
		if readErr != nil {
			return fmt.Errorf("read the openapi document: %w", readErr)
		}
		opts.Source, opts.Location, opts.RemoteRefs = *spec, *spec, *remoteRefs
		d, err = draft.FromOpenAPI(b, opts)
	default:
		so := draft.SampleOptions{Options: opts, CredentialEnv: *credEnv, CredentialHeader: *credHeader, Getenv: osGetenv}
		if *sampleBody != "" {
			so.Body = []byte(*sampleBody)
		}
		if len(headers) > 0 {
			so.Headers = headers
		}
		if *credSigV4 != "" {
			region, service, ok := strings.Cut(*credSigV4, "/")
			if !ok || region == "" || service == "" || *credEnv != "" {
				return usagef("--credential-sigv4 is REGION/SERVICE (us-east-1/dynamodb), and goes without --credential-env")
			}
			so.SigV4 = &draft.SampleSigV4{Region: region, Service: service}
		}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "credential-scheme" {
				so.CredentialScheme = credScheme
			}
		})
		d, err = draft.FromSample(ctx, *sample, so)
	}
	if err != nil {
		return err
	}
	if len(d.Warnings) > 0 {
		fmt.Fprintf(stderr, "airlock: %d warning(s) about the document; the draft keeps what could be read:\n", len(d.Warnings))
		for i, w := range d.Warnings {
			if i == 20 {
				fmt.Fprintf(stderr, "  ... and %d more (listed at the top of the draft)\n", len(d.Warnings)-20)
				break
			}
			fmt.Fprintf(stderr, "  %s\n", w)
		}
	}
	// The first line names the schema for editors (yaml-language-server
	// reads it): a person finishing the draft sees a wrong key at once.
	d.YAML = append([]byte(schema.Comment+"\n"), d.YAML...)
	if *outPath == "" {
		if _, err := stdout.Write(d.YAML); err != nil {
			return err
		}
	} else {
		f, err := os.OpenFile(*outPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("write the draft: %w", err)
		}
		if _, err := f.Write(d.YAML); err != nil {
			f.Close()
			return fmt.Errorf("write the draft: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write the draft: %w", err)
		}
		fmt.Fprintf(stderr, "airlock: wrote %s\n", *outPath)
	}
	if len(d.TODOs) > 0 {
		fmt.Fprintf(stderr, "airlock: %d decision(s) left as TODO; `airlock check` refuses the file until each is resolved:\n", len(d.TODOs))
		for _, t := range d.TODOs {
			fmt.Fprintf(stderr, "  %s\n", t)
		}
	}
	fmt.Fprintln(stderr, "airlock: next, `airlock probe --config FILE --fix` resolves what the live API can prove and checks every assumption")
	return nil
}
