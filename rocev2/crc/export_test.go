package crc

var (
	XnReflected = xnReflected
	Fold        = fold
	MergeTab    = &mergeTab
)
