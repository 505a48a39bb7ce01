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

	"rocetor/cmd/tord/api"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage: torctl [--admin ADDR] [--token-file FILE] [-o table|json] COMMAND
commands:
  status                          version, uptime, ports, workers, stages
  ports                           per-port packets, bytes, PFC, AF_XDP ring drops
  queues [PORT]                   egress queues: traffic classes, scheduler, PFC priority, depth, limit, drops, pause, ECN
  workers                         poll loops, busy ratio, frames, batch sizes
  stages                          per-stage calls, packets, mean batch, per-port switches
  stage on|off STAGE PORT         switch trim or impair on or off at a port
  drops                           dropped frames by reason
  flows [N]                       NetRT's busiest flows
  llr status [PORT]               link-local retransmission per protected port
  llr on|off|auto PORT            pin the port's llr sender on or off, or hand it to the neighbour's monitor
  log-level [LEVEL]               show or set the log level (debug, info, warn, error)
  reload                          re-read tord's configuration; refused whole if invalid or if it needs a restart
  capture --port P [--point rx|tx|rxtx|stage] [--stage S] [--count N] [--snaplen L] [--timeout D] -w FILE
                                  a pcap of what the port received or sent, or a stage forwarded toward it
`

// errUsage marks a command line torctl cannot act on.
var errUsage = errors.New("bad usage")

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("torctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	admin := fs.String("admin", "127.0.0.1:9479", "tord's admin address (tord --admin-addr)")
	out := fs.String("o", "table", "output: table or json")
	timeout := fs.Duration("timeout", 5*time.Second, "give up on tord after this long (captures wait for their own --timeout too)")
	tokenFile := fs.String("token-file", "", "file whose first line is tord's admin token (tord --admin-token-file)")
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
	c := &client{base: "http://" + *admin, http: &http.Client{Timeout: *timeout}, json: *out == "json", out: stdout, errs: stderr, wait: *timeout}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintln(stderr, "torctl:", err)
			return 2
		}
		tok, _, _ := strings.Cut(string(b), "\n")
		c.token = strings.TrimSpace(tok)
	}
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
	cmd, rest := args[0], args[1:]
	if f, ok := commands[cmd]; ok {
		return f(c, rest)
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

// client talks to one tord's admin API.
type client struct {
	base  string
	token string
	http  *http.Client
	wait  time.Duration
	json  bool // print tord's JSON as it is
	out   io.Writer
	errs  io.Writer // notes that are not the answer
}

// request sends a request with the token; body may be nil.
func (c *client) request(method, path string, q url.Values, body io.Reader) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach tord: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		var e api.Error
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("tord: %s %s: %s", method, path, e.Error)
	}
	return resp, nil
}

// do sends a request and decodes the JSON answer into v; an answer other
// than 200 is an error carrying tord's reason.
func (c *client) do(method, path string, q url.Values, v any) error {
	return c.send(method, path, q, nil, v)
}

// send is do with a request body.
func (c *client) send(method, path string, q url.Values, body io.Reader, v any) error {
	resp, err := c.request(method, path, q, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read tord's answer: %w", err)
	}
	if c.json {
		_, err := c.out.Write(b)
		return err
	}
	return json.Unmarshal(b, v)
}

func (c *client) table() *tabwriter.Writer { return tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0) }
