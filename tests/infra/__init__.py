"""The deployment: the CDK app synthesized offline, the teardown against a stand-in, the images."""
