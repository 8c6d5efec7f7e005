package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/xdpcac/xdpcac/cac/violation"
)

// Client talks to the daemon of one state directory.
type Client struct {
	http *http.Client
}

// Dial connects to the daemon of stateDir; nil when none runs there (no
// socket, or nobody listening on it).
func Dial(stateDir string) *Client {
	socket := PathsOf(stateDir).Socket
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return nil
	}
	c.Close()
	return &Client{http: &http.Client{
		Timeout: 30 * time.Second,
		// One request a command: no connection is left open behind it.
		Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}},
	}}
}

// Status asks the daemon about itself.
func (c *Client) Status() (Status, error) {
	var st Status
	return st, c.call(http.MethodGet, PathStatus, nil, &st)
}

// Agents asks for the session agents' state.
func (c *Client) Agents() (Agents, error) {
	var a Agents
	return a, c.call(http.MethodGet, PathAgents, nil, &a)
}

// Fleet asks for the fleet's state and this box's leases.
func (c *Client) Fleet() (Fleet, error) {
	var f Fleet
	return f, c.call(http.MethodGet, PathFleet, nil, &f)
}

// Rejects asks for the finished reject records the daemon keeps and the
// records the tables hold now.
func (c *Client) Rejects() ([]RejectLine, error) {
	var lines []RejectLine
	return lines, c.call(http.MethodGet, PathRejects, nil, &lines)
}

// Violations asks for the classes and levels in violation now or in the
// last five minutes, with their rates.
func (c *Client) Violations() ([]violation.View, error) {
	var v []violation.View
	return v, c.call(http.MethodGet, PathViolations, nil, &v)
}

// Denied asks for the sources of the deny table.
func (c *Client) Denied() ([]DeniedSource, error) {
	var d []DeniedSource
	return d, c.call(http.MethodGet, PathDenied, nil, &d)
}

// ClearDenied asks the daemon to release the sources of the deny table
// target names (ParseDenyTarget), each recorded as released; it answers
// with those it released.
func (c *Client) ClearDenied(target string) ([]DeniedSource, error) {
	var d []DeniedSource
	return d, c.call(http.MethodPost, PathDeniedClear, ClearDeniedRequest{Target: target}, &d)
}

// Apply asks the daemon to put file (an absolute path) in force, and with
// adopt to read it on SIGHUP from now on; its refusal comes back as the
// error.
func (c *Client) Apply(file string, adopt bool) error {
	var out Applied
	return c.call(http.MethodPost, PathApply, ApplyRequest{Config: file, Adopt: adopt}, &out)
}

// Read asks the daemon to run a read command for this peer.
func (c *Client) Read(args []string) (ReadAnswer, error) {
	var a ReadAnswer
	return a, c.call(http.MethodPost, PathRead, ReadRequest{Args: args}, &a)
}

// call sends a request and decodes the answer into out; an error answer
// comes back as an error with the daemon's message.
func (c *Client) call(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://xdpcac"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("ask the running cacctl: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e Error
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("the running cacctl answered %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the answer of the running cacctl to %s: %w", path, err)
	}
	return nil
}
