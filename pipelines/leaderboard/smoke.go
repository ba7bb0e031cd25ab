package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The smoke board (scripts/leaderboard.sh --smoke): every sweep of the leaderboard,
// every recipe and preset, tuning and pick included, at tiny settings, to see the whole
// board work end to end in a few minutes. Its numbers mean nothing: its verdicts are
// undecided (fewer than 10 tasks) and its ranks rest on 3 tasks per family.
const (
	smokeTables     = 3   // tasks per family on a board spec (at most)
	smokeTuneTables = 2   // tasks per family on a tuning spec (tune-*, at most)
	smokeReplicates = 1   // run seeds
	smokeSteps      = 100 // optimiser steps of every method (one held-out check, at the last step)
)

// smokeSpec rewrites a leaderboard sweep spec (YAML) to the smoke settings: tables at
// most smokeTables (smokeTuneTables for a tuning spec, named tune-*), one replicate,
// smokeSteps steps (the defaults' steps, and a steps axis of the grid to that one
// value), "smoke: " before its description. Its methods, tasks and options stay, so
// the smoke board runs every recipe and setting the full board runs.
func smokeSpec(spec []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("not a YAML sweep spec: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a sweep spec: want a mapping of name, tables, methods, grid, …")
	}
	root := doc.Content[0]
	name := value(root, "name")
	if name == nil || name.Value == "" {
		return nil, fmt.Errorf("not a sweep spec: no name")
	}
	if value(root, "methods") == nil || value(root, "grid") == nil {
		return nil, fmt.Errorf("spec %s: not a leaderboard sweep (it needs methods and a grid)", name.Value)
	}
	most := smokeTables
	if strings.HasPrefix(name.Value, "tune-") {
		most = smokeTuneTables
	}
	tables := most
	if t := value(root, "tables"); t != nil {
		n, err := strconv.Atoi(t.Value)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("spec %s: tables %q is not a number of tasks", name.Value, t.Value)
		}
		tables = min(n, most)
	}
	set(root, "tables", strconv.Itoa(tables))
	set(root, "replicates", strconv.Itoa(smokeReplicates))
	if d := value(root, "description"); d != nil {
		d.Value = "smoke: " + d.Value
	}
	defaults := value(root, "defaults")
	if defaults == nil {
		defaults = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "defaults"}, defaults)
	}
	set(defaults, "steps", strconv.Itoa(smokeSteps))
	if s := value(value(root, "grid"), "steps"); s != nil {
		*s = yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: strconv.Itoa(smokeSteps)}}}
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# The smoke version of %s (scripts/leaderboard.sh --smoke): tiny settings, numbers that mean nothing.\n", name.Value)
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

// value is the value node of key in mapping m, nil when m is nil or has no such key.
func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// set sets key of mapping m to the scalar v, adding the key after the last when absent.
func set(m *yaml.Node, key, v string) {
	if n := value(m, key); n != nil {
		*n = yaml.Node{Kind: yaml.ScalarNode, Value: v}
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: v})
}
