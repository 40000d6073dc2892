# syntax=docker/dockerfile:1
# The one image of yunikorn-py: both `yunikorn-scheduler` and `yunikorn-admission-controller` (the Helm
# chart chooses the command per deployment). Build from the repository root:
#   docker build -t yunikorn-py:0.1.0 .

# Build stage: a wheel of the repository, so the runtime image carries no sources or build tools.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY si ./si
COPY actors ./actors
COPY rest ./rest
COPY webhook ./webhook
COPY kubesim ./kubesim
COPY simulate ./simulate
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Runtime stage.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels /wheels/*.whl \
 && groupadd --system --gid 10001 yunikorn \
 && useradd --system --uid 10001 --gid yunikorn --no-create-home --shell /usr/sbin/nologin yunikorn
USER 10001:10001
WORKDIR /tmp
EXPOSE 9080 9089
# The scheduler by default; the admission controller deployment overrides the command.
ENTRYPOINT ["yunikorn-scheduler"]
