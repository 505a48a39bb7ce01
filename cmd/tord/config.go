package main

import "rocetor/tor/pipeline"

// tord's configuration is the switch's (tor/pipeline): one place turns
// it into pipelines, for tord and for the fabric simulator. The names
// below keep tord's code and docs reading as before.
type (
	Config           = pipeline.Config
	NetRTConfig      = pipeline.NetRTConfig
	LLRConfig        = pipeline.LLRConfig
	LLRMonitorConfig = pipeline.LLRMonitorConfig
	ECNConfig        = pipeline.ECNConfig
	ECNProfileConfig = pipeline.ECNProfileConfig
	TrustConfig      = pipeline.TrustConfig
	QoSConfig        = pipeline.QoSConfig
)

// DefaultConfig returns the configuration tord runs with when neither
// file nor flags say otherwise.
func DefaultConfig() Config { return pipeline.DefaultConfig() }

// LoadConfig reads a YAML file over the defaults (pipeline.LoadConfig).
func LoadConfig(path string) (Config, error) { return pipeline.LoadConfig(path) }

// ErrConfig wraps every validation error; the message names the field.
var ErrConfig = pipeline.ErrConfig

// DefaultECNProfile is the name of the built-in ECN profile.
const DefaultECNProfile = pipeline.DefaultECNProfile
