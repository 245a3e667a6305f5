//go:build race

package top_test

func init() { raceEnabled = true }
