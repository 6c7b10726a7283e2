"""The AWS deployment: a CDK v2 app (``infra.app``) and the teardown that removes what it created."""

import os

# The CDK library runs on Node.js through jsii, which prints a banner on every start when Node is
# past its end of life. Debian 13's Node 20 synthesizes this app correctly; the README recommends 22+.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
