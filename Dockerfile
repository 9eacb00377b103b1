# The components image: trainpool's base install (what the components import, nothing of the
# CLI or the emulator) at the exact versions of constraints.txt. Every trainpool component
# runs in it. Built and pushed by `trainpool publish`, which compiles the YAML against its
# digest. The context is only what the install needs (.dockerignore), so the digest changes
# only when trainpool's code, pyproject.toml or constraints.txt do; the long description
# pip wants is a stub here, so README edits do not make a new image.
FROM python:3.11-slim
WORKDIR /opt/trainpool
COPY pyproject.toml constraints.txt ./
COPY trainpool ./trainpool
RUN printf 'trainpool: see https://pypi.org/project/trainpool\n' > README.md \
 && python3 -m pip install --no-cache-dir -c constraints.txt .
WORKDIR /
