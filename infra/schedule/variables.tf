variable "project" {
  description = "Google Cloud project that runs the Dataflow job and the scheduler."
  type        = string
}

variable "region" {
  description = "Region for Cloud Scheduler and the Dataflow job (e.g. us-central1)."
  type        = string
  default     = "us-central1"
}

variable "template_gcs_path" {
  description = "Flex Template spec built by infra/dataflow/build-templates.sh, e.g. gs://my-bucket/jemcheck/templates/regress.json."
  type        = string

  validation {
    condition     = startswith(var.template_gcs_path, "gs://")
    error_message = "template_gcs_path must be a gs:// path."
  }
}

variable "output_prefix" {
  description = "gs:// folder under which each daily run writes its outputs (one subfolder per run: PREFIX/YYYYMMDD, expanded from {DATE} by the launcher)."
  type        = string

  validation {
    condition     = startswith(var.output_prefix, "gs://")
    error_message = "output_prefix must be a gs:// path."
  }
}

variable "schedule" {
  description = "Cron schedule of the regression run (Cloud Scheduler syntax)."
  type        = string
  default     = "0 3 * * *"
}

variable "time_zone" {
  description = "Time zone of the schedule."
  type        = string
  default     = "Etc/UTC"
}

variable "tables" {
  description = "Tables per regression run (the regress pipeline's --tables)."
  type        = number
  default     = 10000
}

variable "parameters" {
  description = "Further regress template parameters (flag name => value as a string), e.g. { seed = \"1\", backend = \"\" }."
  type        = map(string)
  default     = {}
}

variable "max_workers" {
  description = "Maximum number of Dataflow workers."
  type        = number
  default     = 10
}

variable "machine_type" {
  description = "Dataflow worker machine type."
  type        = string
  default     = "n2-standard-4"
}

variable "create_service_accounts" {
  description = "Create the scheduler and worker service accounts and grant their roles. Set false to use existing ones (scheduler_service_account / worker_service_account)."
  type        = bool
  default     = true
}

variable "scheduler_service_account" {
  description = "Email of an existing service account Cloud Scheduler uses to call the Dataflow API (when create_service_accounts = false)."
  type        = string
  default     = ""
}

variable "worker_service_account" {
  description = "Email of an existing service account the Dataflow launcher and workers run as (when create_service_accounts = false)."
  type        = string
  default     = ""
}
