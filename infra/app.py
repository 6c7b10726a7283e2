"""The CDK app: ``cdk deploy`` runs this (see ``cdk.json``); ``python -m infra.app`` synthesizes offline.

Assets are staged per app, not in the account-wide bootstrap bucket and repository: the TTS and
agent images each get an ECR repository of this app, and file assets an S3 bucket of this app, in a
staging stack named ``<stack_name>-staging-<account>-<region>``. The teardown deletes those too.
"""

from __future__ import annotations

import os

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from aws_cdk import cx_api
from aws_cdk.app_staging_synthesizer_alpha import AppStagingSynthesizer, DefaultStagingStack
from cdk_nag import AwsSolutionsChecks

from infra.settings import InfraSettings
from infra.stack import VoiceAgentStack, acknowledge


def build(app: cdk.App | None = None) -> tuple[cdk.App, VoiceAgentStack]:
    app = app or cdk.App()
    settings = InfraSettings.from_context(app.node)
    synthesizer = AppStagingSynthesizer.default_resources(
        app_id=settings.app_id,
        staging_bucket_encryption=s3.BucketEncryption.S3_MANAGED,
        # Keep the last 3 versions of each image; the teardown empties and deletes the rest.
        image_asset_version_count=3,
        # No auto-delete Lambda functions: the teardown empties the bucket and repositories itself.
        auto_delete_staging_assets=False,
        staging_stack_name_prefix=f"{settings.stack_name}-staging")
    env = cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION"))
    stack = VoiceAgentStack(app, "VoiceAgent", settings, synthesizer=synthesizer, env=env)
    for staging in (child for child in app.node.children if isinstance(child, DefaultStagingStack)):
        _acknowledge_staging(staging)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


def _acknowledge_staging(staging: DefaultStagingStack) -> None:
    """The staging stack is the CDK's own construct; these are its asset-publishing grants."""
    acknowledge(staging, "the CDK's file-publishing role may read, write and clean up objects of this app's own "
                         "staging bucket only",
                *(f"AwsSolutions-IAM5[Action::s3:{action}*]" for action in ("GetObject", "GetBucket", "List",
                                                                            "DeleteObject", "Abort")),
                "AwsSolutions-IAM5[Resource::<CdkStagingBucket1636058C.Arn>/*]")
    acknowledge(staging, "the CDK's image-publishing role needs ecr:GetAuthorizationToken, which has no "
                         "resource-level permission", "AwsSolutions-IAM5[Resource::*]")
    acknowledge(staging, "the staging bucket holds only deployment assets, written by the CDK's publishing role "
                         "during cdk deploy; CloudTrail records that role's calls", "AwsSolutions-S1")


def synthesize(outdir: str | os.PathLike, context: dict | None = None) -> cx_api.CloudAssembly:
    """Synthesize the app offline into ``outdir`` with the given context (cdk.json's is not read);
    fails when cdk-nag reports an unacknowledged finding."""
    app, _ = build(cdk.App(outdir=str(outdir), context=context or {}))
    return app.synth()


def main() -> None:
    # Under the CDK CLI, CDK_OUTDIR names the output; run alone, write where the CLI would.
    app, _ = build(cdk.App(outdir=None if "CDK_OUTDIR" in os.environ else "cdk.out"))
    assembly = app.synth()
    print(f"synthesized {', '.join(s.stack_name for s in assembly.stacks)} into {assembly.directory}")


if __name__ == "__main__":
    main()
