package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/airlock-mcp/airlock/redact"
)

// Exit codes, the same for every command.
const (
	exitOK      = 0 // done, or help asked for
	exitFailure = 1 // the command ran and failed, or refused
	exitUsage   = 2 // the command line is wrong: nothing was done
)

// errHelp is returned when a command printed its help on request.
var errHelp = errors.New("help requested")

// usageError is a wrong command line: a flag, an argument or a combination
// the command does not take. Nothing was done.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// flags is a command's flag set with what its help says: every command
// spells its flags --name, takes the positional arguments it declares and
// refuses any other.
type flags struct {
	*flag.FlagSet
	synopsis string // after "airlock ": "serve (--config FILE | --demo) [flags]"
	about    string
	// aliases maps a short spelling to the flag it stands for ("o" to
	// "output"); help shows them together.
	aliases map[string]string
}

func newFlags(name, synopsis, about string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{FlagSet: fs, synopsis: synopsis, about: about, aliases: map[string]string{}}
}

// alias lets -short stand for --long.
func (f *flags) alias(short, long string) {
	fl := f.Lookup(long)
	f.Var(fl.Value, short, fl.Usage)
	f.aliases[short] = long
}

// parse parses args, flags and up to max positional arguments in any
// order, and returns the positional ones. -h and --help print the help on
// stdout and return errHelp.
func (f *flags) parse(args []string, max int, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.help(stdout)
				return nil, errHelp
			}
			return nil, &usageError{msg: dashes(err.Error())}
		}
		args = f.Args()
		if len(args) == 0 {
			break
		}
		if len(pos) == max {
			return nil, usagef("unexpected argument %q", args[0])
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	return pos, nil
}

// dashes spells the flag package's messages the way help does: "flag
// provided but not defined: -x" names --x.
func dashes(msg string) string {
	for _, p := range []string{"not defined: -", "flag: -", "flag -"} {
		msg = strings.Replace(msg, p, p+"-", 1)
	}
	return msg
}

// help prints the command's usage and every flag as --name VALUE.
func (f *flags) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: airlock %s\n", f.synopsis)
	if f.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(f.about, "\n"))
	}
	short := map[string]string{}
	for s, l := range f.aliases {
		short[l] = s
	}
	var rows [][2]string
	f.VisitAll(func(fl *flag.Flag) {
		if _, isAlias := f.aliases[fl.Name]; isAlias {
			return
		}
		placeholder, usage := flag.UnquoteUsage(fl)
		if isBool(fl) {
			placeholder = ""
		}
		name := "--" + fl.Name
		if s, ok := short[fl.Name]; ok {
			name = "-" + s + ", " + name
		}
		switch placeholder {
		case "":
		case "string", "int", "uint", "float", "duration", "value":
			// a usage without a `PLACEHOLDER`: its type, as a placeholder
			name += " " + strings.ToUpper(placeholder)
		default:
			name += " " + placeholder
		}
		if d := fl.DefValue; d != "" && d != "0" && d != "false" && d != "[]" && !strings.Contains(usage, "(default") {
			usage += " (default " + d + ")"
		}
		rows = append(rows, [2]string{name, usage})
	})
	if len(rows) == 0 {
		return
	}
	// By long name: "-o, --output" sorts as output (trimming the
	// characters "-o, " would sort --oauth-… as auth-…).
	long := func(s string) string {
		if i := strings.Index(s, "--"); i >= 0 {
			return s[i+2:]
		}
		return s
	}
	sort.Slice(rows, func(i, j int) bool { return long(rows[i][0]) < long(rows[j][0]) })
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	fmt.Fprintln(w, "\nFlags:")
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], r[1])
	}
}

// isSet reports whether the command line gave the flag name, even as "".
func isSet(f *flags, name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

func isBool(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// envLogLevel sets the default of --log-level.
const envLogLevel = "AIRLOCK_LOG_LEVEL"

// logOptions are the logging flags of the commands that log (serve,
// review, approve): logs go to stderr, or to a file; stdout belongs to the
// command's output (and to MCP, for serve over stdio).
type logOptions struct {
	level, format, file string
}

func (o *logOptions) register(f *flags) {
	def := os.Getenv(envLogLevel)
	if def == "" {
		def = "info"
	}
	f.StringVar(&o.level, "log-level", def, "`LEVEL` of the least severe record logged: debug, info, warn or error (default $"+envLogLevel+", else info)")
	f.StringVar(&o.format, "log-format", "text", "`FORMAT` of each record: text (key=value) or json (one object per line)")
	f.StringVar(&o.file, "log-file", "", "append the logs to `FILE` instead of standard error")
}

// open builds the logger; red, when set, redacts what it writes. close
// closes the log file.
func (o *logOptions) open(stderr io.Writer, red *redact.Redactor) (logger *slog.Logger, close func(), err error) {
	var level slog.Level
	switch o.level {
	case "debug", "info", "warn", "error":
		_ = level.UnmarshalText([]byte(o.level))
	default:
		return nil, nil, usagef("--log-level %q: want debug, info, warn or error", o.level)
	}
	if o.format != "text" && o.format != "json" {
		return nil, nil, usagef("--log-format %q: want text or json", o.format)
	}
	w, close := stderr, func() {}
	if o.file != "" {
		f, err := os.OpenFile(o.file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, close = f, func() { f.Close() }
	}
	if red != nil {
		w = red.Writer(w)
	}
	hopts := &slog.HandlerOptions{Level: level}
	if o.format == "json" {
		return slog.New(slog.NewJSONHandler(w, hopts)), close, nil
	}
	return slog.New(slog.NewTextHandler(w, hopts)), close, nil
}

// quietLogger is the logger of commands whose output is their report
// (demo, probe, contract): nothing is logged.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
