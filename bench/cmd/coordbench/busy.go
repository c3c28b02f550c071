package main

import (
	"fmt"
	"os/exec"
	"syscall"
)

// busyProcs are processes that only burn CPU: the external load of
// nodesoak -load busy and failover -busy-per-core, outside the measured
// processes (the Go scheduler would share goroutines of the measured
// process fairly with the elector; another process is what a host's
// neighbours are).
type busyProcs []*exec.Cmd

// start starts k more busy processes, each in its own process group.
func (b *busyProcs) start(k int) error {
	for range k {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			return fmt.Errorf("busy process: %w", err)
		}
		*b = append(*b, c)
	}
	return nil
}

// stop kills them all and waits for them.
func (b *busyProcs) stop() {
	for _, c := range *b {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	*b = nil
}
