#!/usr/bin/env bash
# Creates (or updates) the Cloud Scheduler job that launches the jemcheck regress
# Flex Template daily: the gcloud equivalent of main.tf.
#
#   PROJECT=my-proj TEMPLATE=gs://my-bucket/jemcheck/templates/regress.json \
#   OUTPUT_PREFIX=gs://my-bucket/jemcheck/regress \
#   SCHEDULER_SA=jemcheck-scheduler@my-proj.iam.gserviceaccount.com \
#   WORKER_SA=jemcheck-dataflow@my-proj.iam.gserviceaccount.com \
#   infra/schedule/schedule.sh
#
#   DRY_RUN=1 ... infra/schedule/schedule.sh   # print the request body and the command only
#
# Environment:
#   PROJECT        Google Cloud project (required)
#   TEMPLATE       gs:// path of the regress Flex Template spec (required)
#   OUTPUT_PREFIX  gs:// folder; each run writes to OUTPUT_PREFIX/YYYYMMDD (required)
#   SCHEDULER_SA   service account whose OAuth token calls the Dataflow API; needs
#                  roles/dataflow.developer and roles/iam.serviceAccountUser on WORKER_SA (required)
#   WORKER_SA      service account of the launcher VM and workers (default: the
#                  project's Compute Engine default account)
#   REGION         default us-central1;  SCHEDULE  default "0 3 * * *" (UTC)
#   TABLES         default 10000;        JOB  default jemcheck-regress-daily
#   MAX_WORKERS    default 10;           MACHINE_TYPE  default n2-standard-4
set -euo pipefail

die() { echo "schedule: $*" >&2; exit 2; }

REGION="${REGION:-us-central1}"
SCHEDULE="${SCHEDULE:-0 3 * * *}"
TABLES="${TABLES:-10000}"
JOB="${JOB:-jemcheck-regress-daily}"
MAX_WORKERS="${MAX_WORKERS:-10}"
MACHINE_TYPE="${MACHINE_TYPE:-n2-standard-4}"
[[ -n "${PROJECT:-}" ]] || die "set PROJECT"
[[ "${TEMPLATE:-}" == gs://* ]] || die "set TEMPLATE=gs://.../regress.json"
[[ "${OUTPUT_PREFIX:-}" == gs://* ]] || die "set OUTPUT_PREFIX=gs://..."
[[ -n "${SCHEDULER_SA:-}" ]] || die "set SCHEDULER_SA (service account email)"
[[ "$TABLES" =~ ^[1-9][0-9]*$ ]] || die "TABLES must be a positive integer, got '$TABLES'"
[[ "$MAX_WORKERS" =~ ^[1-9][0-9]*$ ]] || die "MAX_WORKERS must be a positive integer, got '$MAX_WORKERS'"
for v in PROJECT TEMPLATE OUTPUT_PREFIX SCHEDULER_SA REGION MACHINE_TYPE; do
  [[ "${!v}" != *[\"\\]* ]] || die "$v must not contain quotes or backslashes"
done
[[ "${WORKER_SA:-}" != *[\"\\]* ]] || die "WORKER_SA must not contain quotes or backslashes"

sa_field=""
if [[ -n "${WORKER_SA:-}" ]]; then
  sa_field=", \"serviceAccountEmail\": \"$WORKER_SA\""
fi
# {DATE} is expanded by the launcher image's entry script (infra/docker/flex-entry.sh).
body=$(cat <<JSON
{
  "launchParameter": {
    "jobName": "jemcheck-regress",
    "containerSpecGcsPath": "$TEMPLATE",
    "parameters": {
      "out": "${OUTPUT_PREFIX%/}/{DATE}",
      "tables": "$TABLES"
    },
    "environment": {
      "maxWorkers": $MAX_WORKERS,
      "machineType": "$MACHINE_TYPE",
      "additionalUserLabels": {"app": "jemcheck", "run": "regress"}$sa_field
    }
  }
}
JSON
)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%s\n' "$body" >"$tmp"

uri="https://dataflow.googleapis.com/v1b3/projects/$PROJECT/locations/$REGION/flexTemplates:launch"
args=(
  "$JOB" --project="$PROJECT" --location="$REGION"
  --schedule="$SCHEDULE" --time-zone=Etc/UTC
  --uri="$uri" --http-method=POST
  --headers=Content-Type=application/json
  --message-body-from-file="$tmp"
  --oauth-service-account-email="$SCHEDULER_SA"
  --oauth-token-scope=https://www.googleapis.com/auth/cloud-platform
  --attempt-deadline=320s
  --description="Launches the jemcheck regress Flex Template daily."
)

if [[ "${DRY_RUN:-0}" == 1 ]]; then
  echo "request body:"
  cat "$tmp"
  echo "+ gcloud scheduler jobs create http ${args[*]}"
  exit 0
fi
command -v gcloud >/dev/null || die "gcloud is not installed"
gcloud services enable dataflow.googleapis.com cloudscheduler.googleapis.com --project="$PROJECT"
if gcloud scheduler jobs describe "$JOB" --project="$PROJECT" --location="$REGION" >/dev/null 2>&1; then
  gcloud scheduler jobs update http "${args[@]}"
else
  gcloud scheduler jobs create http "${args[@]}"
fi
echo "scheduled: $JOB ($SCHEDULE UTC). Run it now: gcloud scheduler jobs run $JOB --project=$PROJECT --location=$REGION"
