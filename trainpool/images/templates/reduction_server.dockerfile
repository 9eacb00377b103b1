# Reduction Server: Google's NCCL transport plugin. It needs NCCL >= {min_nccl};
# google-fast-socket conflicts with it and is removed first.
COPY {nccl_check} /tmp/check_nccl.py
RUN python3 /tmp/check_nccl.py {min_nccl}
RUN echo "deb https://packages.cloud.google.com/apt google-fast-socket main" \
      > /etc/apt/sources.list.d/google-fast-socket.list \
 && curl -s -L https://packages.cloud.google.com/apt/doc/apt-key.gpg | apt-key add - \
 && apt-get update \
 && (apt-get remove -y google-fast-socket || true) \
 && apt-get install -y google-reduction-server \
 && rm -rf /var/lib/apt/lists/*
