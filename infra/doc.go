// Package infra holds no code: it is the home of the deployment files (container
// images in docker/, Dataflow Flex Template metadata in dataflow/, the daily
// Cloud Scheduler job in schedule/) and of the tests that check them against the
// pipelines: every JSON and YAML file parses, every Flex Template parameter is a flag
// the pipeline defines, and the Terraform is formatted (and valid, where terraform
// and its provider are available). See README.md.
package infra
