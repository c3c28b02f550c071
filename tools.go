//go:build tools

// Package tools pins dependencies until the code that imports them lands.
package tools

import (
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "go.uber.org/goleak"
)
