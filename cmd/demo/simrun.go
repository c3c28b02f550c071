package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/sim"
)

// simResult is the -json output.
type simResult struct {
	Algorithm  string      `json:"algorithm"`
	IDs        []int64     `json:"ids"`
	Crashed    []int64     `json:"crashed"`
	Initiators []int64     `json:"initiators"`
	Coord      *int64      `json:"coordinator"`
	Term       uint64      `json:"term"`
	TermText   string      `json:"term_text"`
	Agreed     bool        `json:"agreed"`
	Messages   msgCounts   `json:"messages"`
	Heartbeats uint64      `json:"heartbeats"`
	Lost       uint64      `json:"lost"`
	Phases     int         `json:"phases"`
	VirtualMs  int64       `json:"virtual_ms"`
	Violations []string    `json:"violations,omitempty"`
	Mode       string      `json:"mode"`
	Network    networkInfo `json:"network"`
}

type msgCounts struct {
	Election    uint64 `json:"election"`
	Answer      uint64 `json:"answer"`
	Coordinator uint64 `json:"coordinator"`
	Ack         uint64 `json:"ack"`
	Total       uint64 `json:"total"`
}

type networkInfo struct {
	Seed  uint64  `json:"seed"`
	Delay string  `json:"delay_ms"`
	Loss  float64 `json:"loss"`
	Dup   float64 `json:"dup"`
}

func (s *simSetup) run(f *simFlags, stdout io.Writer) error {
	if !f.json {
		s.cfg.Trace = func(line string) { fmt.Fprintln(stdout, line) }
	}
	c, err := sim.New(s.cfg)
	if err != nil {
		return usagef("%v", err)
	}
	if err := c.CrashBefore(s.crashed...); err != nil {
		return err
	}
	if err := c.Bootstrap(c.Highest()); err != nil {
		return err
	}
	c.ResetCounts()
	for _, id := range s.initiate {
		if err := c.Detect(id); err != nil {
			return err
		}
	}
	c.Settle(f.maxMs)
	res := s.result(c, f)
	if f.json {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	printSummary(stdout, res)
	return nil
}

func (s *simSetup) result(c *sim.Sim, f *simFlags) simResult {
	agreed, ok := c.Agreement()
	res := simResult{
		Algorithm: f.algorithm, IDs: nums(s.ids), Crashed: nums(s.crashed), Initiators: nums(s.initiate),
		Agreed: ok, VirtualMs: c.Now(), Lost: c.Lost, Mode: s.cfg.Mode.String(),
		Heartbeats: c.Sent[core.MsgHeartbeat] + c.Sent[core.MsgHeartbeatAck],
		Messages: msgCounts{Election: c.Sent[core.MsgElection], Answer: c.Sent[core.MsgAnswer],
			Coordinator: c.Sent[core.MsgCoordinator], Ack: c.Sent[core.MsgAck], Total: c.ElectionMessages()},
		Violations: c.Checker().Violations,
		Network:    networkInfo{Seed: f.seed, Delay: f.delay, Loss: f.loss, Dup: f.dup},
	}
	if agreed.Coordinator != "" {
		v, _ := strconv.ParseInt(agreed.Coordinator, 10, 64)
		res.Coord = &v
		res.Term, res.TermText = uint64(agreed.Term), agreed.Term.String()
	}
	for _, id := range s.ids {
		if n := c.Node(id); n != nil && c.Up(id) {
			res.Phases = max(res.Phases, phases(n))
		}
	}
	return res
}

// phases is the number of active/relay phases a node saw in its last
// election (0 for the other algorithms).
func phases(n *core.Node) int {
	if p, ok := any(n).(interface{ Phases() int }); ok {
		return p.Phases()
	}
	return 0
}

func nums(ids []string) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		v, _ := strconv.ParseInt(id, 10, 64)
		out = append(out, v)
	}
	return out
}

func printSummary(w io.Writer, r simResult) {
	coord := "none"
	if r.Coord != nil {
		coord = strconv.FormatInt(*r.Coord, 10)
	}
	fmt.Fprintf(w, "\n%s (%s mode), %d nodes, crashed %v, initiators %v\n", r.Algorithm, r.Mode, len(r.IDs), r.Crashed, r.Initiators)
	fmt.Fprintf(w, "coordinator %s, term %s, agreed %v, after %d virtual ms\n", coord, r.TermText, r.Agreed, r.VirtualMs)
	m := r.Messages
	fmt.Fprintf(w, "messages: election %d, answer %d, coordinator %d, ack %d, total %d (heartbeats %d, lost %d)\n",
		m.Election, m.Answer, m.Coordinator, m.Ack, m.Total, r.Heartbeats, r.Lost)
	if r.Phases > 0 {
		fmt.Fprintf(w, "active/relay phases: %d\n", r.Phases)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "VIOLATION: %s\n", v)
	}
}

// runScript runs a scenario file: each command is echoed with its output.
// Expected output already in the file is ignored (tests compare it).
func runScript(text string, stdout io.Writer) error {
	var sc sim.Script
	sc2 := bufio.NewScanner(strings.NewReader(text))
	sc2.Buffer(make([]byte, 1<<20), 1<<20)
	inExpected := false
	lineNo := 0
	for sc2.Scan() {
		lineNo++
		line := strings.TrimSpace(sc2.Text())
		switch {
		case inExpected:
			inExpected = line != ""
			continue
		case line == "----":
			inExpected = true
			continue
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		}
		fmt.Fprintf(stdout, "\n> %s\n", line)
		out, err := sc.ExecLine(line)
		if err != nil {
			return usagef("line %d: %v", lineNo, err)
		}
		fmt.Fprint(stdout, out)
	}
	if sc.Sim() != nil {
		for _, v := range sc.Sim().Checker().Violations {
			fmt.Fprintf(stdout, "VIOLATION: %s\n", v)
		}
	}
	return sc2.Err()
}
