# The components image: trainpool's base install (what the components import, nothing of the
# CLI or the emulator) at the exact versions of constraints.txt. Every trainpool component
# runs in it (trainpool.config.COMPONENTS_IMAGE). Built like a training image, tagged with
# the digest of its context:  trainpool build-image . --image us-docker.pkg.dev/PROJECT/images/components
FROM python:3.11-slim
WORKDIR /opt/trainpool
COPY pyproject.toml README.md constraints.txt ./
COPY trainpool ./trainpool
RUN python3 -m pip install --no-cache-dir -c constraints.txt .
WORKDIR /
