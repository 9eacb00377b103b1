# The components image: trainpool and kfp, the image every trainpool component runs in
# (trainpool.config.COMPONENTS_IMAGE). Built like a training image, tagged with the digest
# of its context:  trainpool build-image . --image us-docker.pkg.dev/PROJECT/images/components
FROM python:3.11-slim
WORKDIR /opt/trainpool
COPY pyproject.toml README.md ./
COPY trainpool ./trainpool
RUN python3 -m pip install --no-cache-dir .
WORKDIR /
