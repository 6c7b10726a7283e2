"""Remove everything a deployment created, including what CloudFormation leaves behind.

``cdk destroy`` deletes the stacks, but the app's staging bucket and ECR repositories are retained
(they hold the images and assets, and keep costing money), and the endpoint's and runtime's log
groups are created at run time, outside CloudFormation. The teardown deletes, in order:

1. the main stack (AgentCore runtime and endpoint, SageMaker endpoint, endpoint configuration and
   model, autoscaling, alarms, dashboard, topic, roles), waiting until it is gone;
2. the staging stack, then its retained bucket (every object version) and ECR repositories (every
   image);
3. the log groups of the endpoint and of the runtime.

``plan()`` lists all of it without deleting anything (the dry run). Only boto3 is needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import boto3
from botocore.exceptions import ClientError

from infra.settings import InfraSettings

RETAINED_TYPES = ("AWS::S3::Bucket", "AWS::ECR::Repository")
_GONE = ("DELETE_COMPLETE",)


class TeardownError(RuntimeError):
    pass


@dataclass(frozen=True)
class Item:
    """One thing the teardown deletes: a stack, a stack's resource, a bucket, a repository, a log group."""

    kind: str
    name: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind:<40} {self.name}" + (f"  ({self.detail})" if self.detail else "")


class Teardown:
    def __init__(self, settings: InfraSettings, session: boto3.Session | None = None, *,
                 say: Callable[[str], None] = print, stack_timeout: float = 3600.0, poll_seconds: float = 10.0) -> None:
        self.settings = settings
        self.session = session or boto3.Session()
        self.say = say
        self.stack_timeout = stack_timeout
        self.poll_seconds = poll_seconds
        self._cfn = self.session.client("cloudformation")
        self._s3 = self.session.client("s3")
        self._ecr = self.session.client("ecr")
        self._logs = self.session.client("logs")

    # --- What exists ------------------------------------------------------------------------------

    def _stack_resources(self, stack_name: str) -> list[dict] | None:
        try:
            stack = self._cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
        except ClientError as exc:
            if "does not exist" in str(exc):
                return None
            raise
        if stack["StackStatus"] in _GONE:
            return None
        pages = self._cfn.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        return [resource for page in pages for resource in page["StackResourceSummaries"]
                if resource.get("ResourceStatus") != "DELETE_COMPLETE"]

    def _buckets_and_repositories(self, resources: list[dict]) -> tuple[list[str], list[str]]:
        buckets = [r["PhysicalResourceId"] for r in resources if r["ResourceType"] == "AWS::S3::Bucket"]
        repositories = [r["PhysicalResourceId"] for r in resources if r["ResourceType"] == "AWS::ECR::Repository"]
        # Also by name: a teardown interrupted after the staging stack was deleted left them behind.
        identity = self.session.client("sts").get_caller_identity()
        buckets.append(self.settings.staging_bucket_name(identity["Account"], self.session.region_name))
        repositories.extend(self.settings.image_repositories)
        return sorted({b for b in buckets if self._bucket_exists(b)}), \
            sorted({r for r in repositories if self._repository_exists(r)})

    def _bucket_exists(self, bucket: str) -> bool:
        try:
            self._s3.head_bucket(Bucket=bucket)
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("404", "NoSuchBucket", "NotFound"):
                return False
            raise

    def _repository_exists(self, repository: str) -> bool:
        try:
            self._ecr.describe_repositories(repositoryNames=[repository])
            return True
        except self._ecr.exceptions.RepositoryNotFoundException:
            return False

    def _object_versions(self, bucket: str) -> list[dict]:
        found = []
        for page in self._s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            for entry in page.get("Versions", []) + page.get("DeleteMarkers", []):
                found.append({"Key": entry["Key"], "VersionId": entry["VersionId"]})
        return found

    def _images(self, repository: str) -> list[dict]:
        pages = self._ecr.get_paginator("list_images").paginate(repositoryName=repository)
        return [image for page in pages for image in page["imageIds"]]

    def _log_groups(self, main_resources: list[dict]) -> list[str]:
        """The endpoint's log group (its exact name: another endpoint's name may start with ours) and
        the runtime's (named after its id, which ends in a random suffix: a prefix is safe)."""
        wanted = {f"/aws/sagemaker/Endpoints/{self.settings.endpoint_name}": True}
        wanted |= {f"/aws/bedrock-agentcore/runtimes/{r['PhysicalResourceId']}": False for r in main_resources
                   if r["ResourceType"] == "AWS::BedrockAgentCore::Runtime"}
        groups = []
        for prefix, exact in wanted.items():
            for page in self._logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=prefix):
                groups.extend(g["logGroupName"] for g in page["logGroups"] if not exact or g["logGroupName"] == prefix)
        return sorted(set(groups))

    def plan(self) -> list[Item]:
        """Everything the teardown would delete, found in the account now. Deletes nothing."""
        s = self.settings
        items: list[Item] = []
        stacks = {name: self._stack_resources(name) for name in (s.stack_name, s.staging_stack_name)}
        for stack_name, resources in stacks.items():
            if resources is None:
                continue
            items.append(Item("AWS::CloudFormation::Stack", stack_name, f"{len(resources)} resources"))
            items += [Item(r["ResourceType"], r["PhysicalResourceId"], "in the stack") for r in resources
                      if r["ResourceType"] not in RETAINED_TYPES]
        main, staging = (stacks[s.stack_name] or []), (stacks[s.staging_stack_name] or [])
        buckets, repositories = self._buckets_and_repositories(main + staging)
        items += [Item("AWS::S3::Bucket", b, f"{len(self._object_versions(b))} object versions") for b in buckets]
        items += [Item("AWS::ECR::Repository", r, f"{len(self._images(r))} images") for r in repositories]
        items += [Item("AWS::Logs::LogGroup", g) for g in self._log_groups(main)]
        return items

    # --- Deleting ---------------------------------------------------------------------------------

    def run(self) -> list[Item]:
        """Delete everything ``plan()`` lists; returns what still exists afterwards (empty on success)."""
        s = self.settings
        main = self._stack_resources(s.stack_name) or []
        log_groups = self._log_groups(main)  # the runtime id is known only while its stack exists
        self._delete_stack(s.stack_name)
        staging = self._stack_resources(s.staging_stack_name) or []
        buckets, repositories = self._buckets_and_repositories(main + staging)
        self._delete_stack(s.staging_stack_name)
        for bucket in buckets:
            self._delete_bucket(bucket)
        for repository in repositories:
            self._delete_repository(repository)
        for group in log_groups:
            self._logs.delete_log_group(logGroupName=group)
            self.say(f"deleted log group {group}")
        left = set(self.plan())
        for group in log_groups:  # the runtime's groups are no longer found through its stack
            found = self._logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]
            if any(g["logGroupName"] == group for g in found):
                left.add(Item("AWS::Logs::LogGroup", group))
        return sorted(left, key=str)

    def _delete_stack(self, stack_name: str) -> None:
        if self._stack_resources(stack_name) is None:
            return
        self.say(f"deleting stack {stack_name} ...")
        self._cfn.delete_stack(StackName=stack_name)
        deadline = time.monotonic() + self.stack_timeout
        while True:
            try:
                stack = self._cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
            except ClientError as exc:
                if "does not exist" in str(exc):
                    break
                raise
            status = stack["StackStatus"]
            if status in _GONE:
                break
            if status == "DELETE_FAILED":
                raise TeardownError(f"stack {stack_name}: DELETE_FAILED ({stack.get('StackStatusReason', '')}); "
                                    "fix the resource named there, then run the teardown again")
            if time.monotonic() > deadline:
                raise TeardownError(f"stack {stack_name} still {status} after {self.stack_timeout:.0f} s; "
                                    "run the teardown again to go on waiting")
            time.sleep(self.poll_seconds)
        self.say(f"deleted stack {stack_name}")

    def _delete_bucket(self, bucket: str) -> None:
        versions = self._object_versions(bucket)
        for start in range(0, len(versions), 1000):  # DeleteObjects takes at most 1000 keys
            self._s3.delete_objects(Bucket=bucket, Delete={"Objects": versions[start:start + 1000], "Quiet": True})
        self._s3.delete_bucket(Bucket=bucket)
        self.say(f"deleted bucket {bucket} ({len(versions)} object versions)")

    def _delete_repository(self, repository: str) -> None:
        images = len(self._images(repository))
        self._ecr.delete_repository(repositoryName=repository, force=True)
        self.say(f"deleted ECR repository {repository} ({images} images)")
