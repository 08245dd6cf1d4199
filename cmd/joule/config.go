package main

import "github.com/joulehook/joule/tiers/config"

// The configuration files in $JOULE_HOME and the store's override, which
// tiers/config reads, under the names the commands and their tests use.
const (
	ConfigFile = config.File
	MeterFile  = config.MeterFile
	StoreEnv   = config.StoreEnv
)
