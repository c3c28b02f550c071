// Package fenceerr holds fencing.ErrStale, so that package election can
// recognise it in a Claim's error (and stop retrying) without importing
// package fencing and database/sql with it.
package fenceerr

import "errors"

// ErrStale is fencing.ErrStale: the fence has moved past the term.
var ErrStale = errors.New("fencing: stale term: a later term holds the fence")
