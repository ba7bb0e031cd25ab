#!/usr/bin/env bash
# Builds and pushes the jemcheck container images and the Dataflow Flex Templates
# for the sweep and regress pipelines.
#
#   PROJECT=my-proj REGION=us-central1 BUCKET=gs://my-bucket infra/dataflow/build-templates.sh
#   GPU=1 ... infra/dataflow/build-templates.sh       # also the GPU worker and sweep-gpu template
#   DRY_RUN=1 ... infra/dataflow/build-templates.sh   # print the commands only
#
# Environment:
#   PROJECT  Google Cloud project (default: gcloud config get-value project)
#   REGION   Artifact Registry / Dataflow region (default us-central1)
#   BUCKET   gs:// bucket or folder for templates, staging and temp files (required)
#   REPO     image repository (default $REGION-docker.pkg.dev/$PROJECT/jemcheck)
#   TAG      image tag (default: git short commit, else the date)
#   GPU      1 = also build the GPU worker image and a sweep-gpu template
#
# Needs docker (with BuildKit) authenticated to the repository
# (gcloud auth configure-docker $REGION-docker.pkg.dev) and gcloud.
# Result: $BUCKET/templates/{sweep,regress}.json (and sweep-gpu.json), launchable with
#   gcloud dataflow flex-template run NAME --region=$REGION \
#     --template-file-gcs-location=$BUCKET/templates/regress.json --parameters=out=gs://...
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "build-templates: $*" >&2; exit 2; }
run() {
  echo "+ $*"
  if [[ "${DRY_RUN:-0}" != 1 ]]; then "$@"; fi
}

REGION="${REGION:-us-central1}"
if [[ -z "${PROJECT:-}" ]]; then
  if [[ "${DRY_RUN:-0}" == 1 ]]; then PROJECT=my-project
  else PROJECT="$(gcloud config get-value project 2>/dev/null)" || true
  fi
fi
[[ -n "${PROJECT:-}" ]] || die "set PROJECT (or gcloud config set project ...)"
[[ "${BUCKET:-}" == gs://* ]] || die "set BUCKET=gs://bucket[/folder] (got '${BUCKET:-}')"
BUCKET="${BUCKET%/}"
REPO="${REPO:-$REGION-docker.pkg.dev/$PROJECT/jemcheck}"
TAG="${TAG:-$(git rev-parse --short HEAD 2>/dev/null || date +%Y%m%d-%H%M%S)}"
GPU="${GPU:-0}"

if [[ "${DRY_RUN:-0}" != 1 ]]; then
  command -v docker >/dev/null || die "docker is not installed"
  command -v gcloud >/dev/null || die "gcloud is not installed"
fi
for m in sweep regress; do
  [[ -f "infra/dataflow/$m-metadata.json" ]] || die "missing infra/dataflow/$m-metadata.json"
done

export DOCKER_BUILDKIT=1
build_push() { # image dockerfile target [build-arg...]
  local image="$1" file="$2" target="$3"; shift 3
  local args=()
  for a in "$@"; do args+=(--build-arg "$a"); done
  run docker build -f "$file" --target "$target" "${args[@]}" -t "$image" .
  run docker push "$image"
}

# CPU worker image (optional for CPU jobs: the stock Beam image works too).
build_push "$REPO/jemcheck-worker:$TAG" infra/docker/Dockerfile worker
for m in sweep regress; do
  image="$REPO/jemcheck-$m-launcher:$TAG"
  build_push "$image" infra/docker/Dockerfile launcher "PIPELINE=$m"
  run gcloud dataflow flex-template build "$BUCKET/templates/$m.json" \
    --project="$PROJECT" \
    --image="$image" \
    --sdk-language=GO \
    --metadata-file="infra/dataflow/$m-metadata.json" \
    --staging-location="$BUCKET/staging" \
    --temp-location="$BUCKET/temp"
done

if [[ "$GPU" == 1 ]]; then
  worker="$REPO/jemcheck-gpu-worker:$TAG"
  build_push "$worker" infra/docker/Dockerfile.gpu worker
  image="$REPO/jemcheck-sweep-gpu-launcher:$TAG"
  build_push "$image" infra/docker/Dockerfile.gpu launcher "PIPELINE=sweep" "WORKER_IMAGE=$worker"
  run gcloud dataflow flex-template build "$BUCKET/templates/sweep-gpu.json" \
    --project="$PROJECT" \
    --image="$image" \
    --sdk-language=GO \
    --metadata-file=infra/dataflow/sweep-metadata.json \
    --staging-location="$BUCKET/staging" \
    --temp-location="$BUCKET/temp" \
    --worker-machine-type=n1-standard-8
fi

echo "templates: $BUCKET/templates/ (images tagged $TAG)"
