# A Python 3.12 base made offline (voice_agent/dev/python_base.py), for the images' BASE_IMAGE where
# python:3.12-slim cannot be pulled: Debian's minimal root file system with the libraries the copied
# CPython links, that CPython in /usr/local (where the official python images have it), pip, and the
# certificate authorities the building machine trusts (so pip reaches the registry it reaches).
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
COPY ca-certificates/ /usr/local/share/ca-certificates/
COPY python/ /usr/local/
ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
RUN update-ca-certificates \
    && ldconfig \
    && python3.12 -m ensurepip --default-pip \
    && python3.12 -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib, uuid, decimal, hashlib"
CMD ["python3"]
