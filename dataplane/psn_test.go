package dataplane

import "rocetor/rocev2/psn"

func rocev2PSN(v uint32) psn.PSN { return psn.New(v) }
