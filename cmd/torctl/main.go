// Command torctl operates a running tord through its admin API: it turns
// link-local retransmission on and off per port and shows what the
// corruption monitor measures.
//
//	torctl [--admin 127.0.0.1:9479] [-o table|json] llr status [PORT]
//	torctl [--admin ADDR] llr on|off|auto PORT
//
// on and off pin the port's sender (the neighbour's protection requests
// are then ignored); auto hands it back to the neighbour's monitor.
// Exit status: 0 done, 1 tord refused or could not be reached, 2 bad
// usage.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage: torctl [--admin ADDR] [-o table|json] COMMAND
commands:
  llr status [PORT]       link-local retransmission per protected port
  llr on|off|auto PORT    pin the port's sender on or off, or hand it to the neighbour's monitor
`

// errUsage marks a command line torctl cannot act on.
var errUsage = errors.New("bad usage")

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("torctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	admin := fs.String("admin", "127.0.0.1:9479", "tord's admin address (tord --admin-addr)")
	out := fs.String("o", "table", "output: table or json")
	timeout := fs.Duration("timeout", 5*time.Second, "give up on tord after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out != "table" && *out != "json" {
		fmt.Fprintf(stderr, "torctl: -o %q: want table or json\n", *out)
		return 2
	}
	c := &client{base: "http://" + *admin, http: &http.Client{Timeout: *timeout}, json: *out == "json", out: stdout}
	err := dispatch(c, fs.Args())
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "torctl: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintln(stderr, "torctl:", err)
		return 1
	}
}

func dispatch(c *client, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch args[0] {
	case "llr":
		return llrCmd(c, args[1:])
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

// client talks to one tord's admin API.
type client struct {
	base string
	http *http.Client
	json bool // print tord's JSON as it is
	out  io.Writer
}

// do sends a request and decodes the JSON answer into v; an answer other
// than 200 is an error carrying tord's reason.
func (c *client) do(method, path string, q url.Values, v any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach tord: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read tord's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("tord: %s %s: %s", method, path, strings.TrimSpace(string(body)))
	}
	if c.json {
		_, err := c.out.Write(body)
		return err
	}
	return json.Unmarshal(body, v)
}

func (c *client) table() *tabwriter.Writer { return tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0) }
