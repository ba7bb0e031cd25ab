# Daily jemcheck regression run: Cloud Scheduler calls the Dataflow
# flexTemplates:launch REST endpoint with an OAuth token of a service account,
# launching the regress Flex Template built by infra/dataflow/build-templates.sh.
#
#   cd infra/schedule
#   terraform init
#   terraform apply -var project=my-proj \
#     -var template_gcs_path=gs://my-bucket/jemcheck/templates/regress.json \
#     -var output_prefix=gs://my-bucket/jemcheck/regress
#
# schedule.sh does the same with gcloud.

terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0, < 8.0"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}

locals {
  scheduler_sa = var.create_service_accounts ? google_service_account.scheduler[0].email : var.scheduler_service_account
  worker_sa    = var.create_service_accounts ? google_service_account.worker[0].email : var.worker_service_account

  # The launch request body (projects.locations.flexTemplates.launch). Cloud
  # Scheduler sends the same body every day; the launcher image's entry script
  # (infra/docker/flex-entry.sh) replaces {DATE} in every parameter with the UTC
  # date, so each run writes to its own folder.
  launch_body = {
    launchParameter = {
      jobName              = "jemcheck-regress"
      containerSpecGcsPath = var.template_gcs_path
      parameters = merge({
        out    = "${trimsuffix(var.output_prefix, "/")}/{DATE}"
        tables = tostring(var.tables)
      }, var.parameters)
      environment = {
        maxWorkers          = var.max_workers
        machineType         = var.machine_type
        serviceAccountEmail = local.worker_sa
        additionalUserLabels = {
          app = "jemcheck"
          run = "regress"
        }
      }
    }
  }
}

resource "google_project_service" "apis" {
  for_each           = toset(["dataflow.googleapis.com", "cloudscheduler.googleapis.com"])
  service            = each.value
  disable_on_destroy = false
}

resource "google_service_account" "scheduler" {
  count        = var.create_service_accounts ? 1 : 0
  account_id   = "jemcheck-scheduler"
  display_name = "jemcheck: Cloud Scheduler launching the regress template"
}

resource "google_service_account" "worker" {
  count        = var.create_service_accounts ? 1 : 0
  account_id   = "jemcheck-dataflow"
  display_name = "jemcheck: Dataflow launcher and workers"
}

# The scheduler's identity creates Dataflow jobs and acts as the worker account.
resource "google_project_iam_member" "scheduler_dataflow" {
  count   = var.create_service_accounts ? 1 : 0
  project = var.project
  role    = "roles/dataflow.developer"
  member  = "serviceAccount:${local.scheduler_sa}"
}

resource "google_service_account_iam_member" "scheduler_acts_as_worker" {
  count              = var.create_service_accounts ? 1 : 0
  service_account_id = google_service_account.worker[0].name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${local.scheduler_sa}"
}

# The worker account runs the launcher VM and the workers: it reads the template
# and images and reads/writes the buckets.
resource "google_project_iam_member" "worker_roles" {
  for_each = var.create_service_accounts ? toset([
    "roles/dataflow.worker",
    "roles/storage.objectAdmin",
    "roles/artifactregistry.reader",
  ]) : toset([])
  project = var.project
  role    = each.value
  member  = "serviceAccount:${local.worker_sa}"
}

resource "google_cloud_scheduler_job" "regress" {
  name             = "jemcheck-regress-daily"
  description      = "Launches the jemcheck regress Flex Template daily."
  schedule         = var.schedule
  time_zone        = var.time_zone
  region           = var.region
  attempt_deadline = "320s"

  retry_config {
    retry_count = 1
  }

  http_target {
    http_method = "POST"
    uri         = "https://dataflow.googleapis.com/v1b3/projects/${var.project}/locations/${var.region}/flexTemplates:launch"
    headers = {
      "Content-Type" = "application/json"
    }
    body = base64encode(jsonencode(local.launch_body))

    oauth_token {
      service_account_email = local.scheduler_sa
      scope                 = "https://www.googleapis.com/auth/cloud-platform"
    }
  }

  depends_on = [google_project_service.apis]
}

output "scheduler_job" {
  description = "Cloud Scheduler job name; run it now with: gcloud scheduler jobs run NAME --location=REGION"
  value       = google_cloud_scheduler_job.regress.name
}

output "launch_body" {
  description = "The flexTemplates:launch request body the job sends."
  value       = jsonencode(local.launch_body)
}
