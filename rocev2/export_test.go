package rocev2

// PadWide lets tests run icrcVerifyOwned with and without the padding to
// the 512-bit kernel's length, whatever the CPU has.
var PadWide = &padWide
