package dcp

// Moments exports moments for the tests.
var Moments = moments
