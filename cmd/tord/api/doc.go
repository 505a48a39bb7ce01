// Package api holds the JSON types of tord's admin API
// (docs/operations.md, "Admin API"), so that tord, which writes them, and
// torctl, which reads them, cannot disagree on a field.
package api
