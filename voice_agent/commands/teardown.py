"""``voice-agent teardown``: delete everything the CDK deploy created, including what CloudFormation retains."""

from __future__ import annotations

import argparse
import sys


def _teardown(args: argparse.Namespace) -> int:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from infra.settings import InfraSettings
    from infra.teardown import Teardown, TeardownError

    settings = InfraSettings(stack_name=args.stack_name)
    settings.validate()
    session = boto3.Session(region_name=args.region)
    if not session.region_name:
        print("teardown: no region: pass --region or set AWS_REGION", file=sys.stderr)
        return 2
    teardown = Teardown(settings, session)
    try:
        plan = teardown.plan()
    except (BotoCoreError, ClientError) as exc:  # no credentials, access denied, no network
        print(f"teardown: cannot list what exists: {exc}", file=sys.stderr)
        return 1
    where = f"stack {settings.stack_name} in {session.region_name}"
    if not plan:
        print(f"teardown: nothing of {where} exists")
        return 0
    print(f"teardown of {where}: {'would delete' if args.dry_run else 'deletes'} {len(plan)} items")
    for item in plan:
        print(f"  {item}")
    if args.dry_run:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            print("teardown: not a terminal; pass --yes to delete without confirmation", file=sys.stderr)
            return 2
        if input("delete all of this? type 'delete' to go on: ").strip() != "delete":
            print("teardown: nothing deleted")
            return 1
    try:
        remaining = teardown.run()
    except (TeardownError, BotoCoreError, ClientError) as exc:
        print(f"teardown: {exc}; run it again to go on", file=sys.stderr)
        return 1
    if remaining:
        print(f"teardown: {len(remaining)} items still exist:", file=sys.stderr)
        for item in remaining:
            print(f"  {item}", file=sys.stderr)
        return 1
    print(f"teardown: {where} is gone, nothing left behind")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    teardown = commands.add_parser(
        "teardown", help="delete everything the CDK deploy created, including the retained staging bucket, "
                         "ECR repositories and log groups",
        description="Deletes the main stack (AgentCore runtime, SageMaker endpoint, configuration, model, alarms, "
                    "dashboard), then the staging stack, then empties and deletes its bucket and ECR repositories, "
                    "then the endpoint's and runtime's log groups. Uses boto3's credentials and region.")
    teardown.add_argument("--stack-name", default="VoiceAgent", help="the deployed stack_name (default: VoiceAgent)")
    teardown.add_argument("--region", help="the deployment's region (default: boto3's: $AWS_REGION, the profile)")
    teardown.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")
    teardown.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a terminal)")
    teardown.set_defaults(handler=_teardown)
