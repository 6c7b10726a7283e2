"""The teardown, against moto's server: a local stand-in for CloudFormation, S3, ECR, SageMaker,
CloudWatch and CloudWatch Logs that the real boto3 clients talk to over HTTP.

The stacks are created from the app's own synthesized templates: the staging stack whole, the main
stack without the resource types moto does not model (the AgentCore runtime, its endpoint and log
delivery, and what refers to them). Everything else is as deployed: the SageMaker model, endpoint
configuration and endpoint, autoscaling, the SNS topic and the roles. (moto's CloudFormation does
not create CloudWatch alarms; on AWS they go with the main stack like the endpoint.)"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout

import boto3
import pytest

from agent.processes import Tie
from infra.settings import InfraSettings
from tests.support.infra import synthesize
from voice_agent.cli import main as cli
from voice_agent.dev import servers

REGION = "us-east-1"
OTHERS_LOG_GROUP = "/aws/sagemaker/Endpoints/VoiceAgent-tts-staging"
# moto's SageMaker knows GPU instance types up to ml.g4dn; the default ml.g5 is checked in test_infra.
SETTINGS = InfraSettings(tts_instance_type="ml.g4dn.xlarge")
MODELLED = {"AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Endpoint",
            "AWS::CloudWatch::Alarm", "AWS::SNS::Topic", "AWS::SNS::TopicPolicy", "AWS::IAM::Role",
            "AWS::IAM::Policy", "AWS::ApplicationAutoScaling::ScalableTarget",
            "AWS::ApplicationAutoScaling::ScalingPolicy", "AWS::S3::Bucket", "AWS::S3::BucketPolicy",
            "AWS::ECR::Repository", "AWS::KMS::Key"}


@pytest.fixture(scope="module")
def aws_stand_in(tmp_path_factory) -> Iterator[str]:
    port = servers.free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")  # noqa: SIM115 - closed below
    tie = Tie()  # moto's server, started so that it ends with the test run, however the run ends
    launch = ("import sys; from agent.processes import exit_with_parent; exit_with_parent(); "
              "from moto.server import main; main(sys.argv[1:])")
    process = subprocess.Popen([sys.executable, "-c", launch, "-H", "127.0.0.1", "-p", str(port)],
                               stdout=log, stderr=subprocess.STDOUT, env=tie.env, pass_fds=tie.pass_fds)
    server = servers.Server("AWS stand-in", port, process, tie=tie)
    try:
        servers.wait_healthy(server, 60, probe=servers.accepts_connections)
        yield server.http_url
    finally:
        servers.stop(server)
        log.close()


@pytest.fixture
def aws(aws_stand_in: str, monkeypatch) -> boto3.Session:
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_stand_in)
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_REGION", REGION), ("AWS_DEFAULT_REGION", REGION)):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return boto3.Session(region_name=REGION)


def modelled(template: dict) -> dict:
    """The template without the resources moto cannot create and whatever refers to them."""
    template = {key: value for key, value in template.items() if key not in ("Rules", "Parameters")}
    body = template["Resources"]
    dropped = {name for name, resource in body.items() if resource["Type"] not in MODELLED}
    while True:
        referring = {name for name, resource in body.items() if name not in dropped and any(
            f'"{gone}"' in json.dumps({k: v for k, v in resource.items() if k != "DependsOn"}) for gone in dropped)}
        if not referring:
            break
        dropped |= referring
    template["Resources"] = {name: resource for name, resource in body.items() if name not in dropped}
    for resource in template["Resources"].values():
        if "DependsOn" in resource:
            depends = resource["DependsOn"] if isinstance(resource["DependsOn"], list) else [resource["DependsOn"]]
            resource["DependsOn"] = [name for name in depends if name not in dropped]
    template["Outputs"] = {name: output for name, output in template.get("Outputs", {}).items()
                           if not any(f'"{gone}"' in json.dumps(output) for gone in dropped)}
    return template


def deploy(aws: boto3.Session, tmp_path) -> None:
    templates = synthesize(tmp_path, tts_instance_type=SETTINGS.tts_instance_type)
    cfn = aws.client("cloudformation")
    cfn.create_stack(StackName=SETTINGS.staging_stack_name, Capabilities=["CAPABILITY_NAMED_IAM"],
                     TemplateBody=json.dumps(modelled(templates[SETTINGS.staging_stack_name])))
    cfn.create_stack(StackName=SETTINGS.stack_name, Capabilities=["CAPABILITY_NAMED_IAM"],
                     TemplateBody=json.dumps(modelled(templates[SETTINGS.stack_name])))
    for name in (SETTINGS.staging_stack_name, SETTINGS.stack_name):
        assert cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    # What a deploy and a day of traffic leave: staged assets, pushed images, endpoint logs.
    bucket = SETTINGS.staging_bucket_name("123456789012", REGION)
    s3 = aws.client("s3")
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"v1", b"v2"):
        s3.put_object(Bucket=bucket, Key="deploy-time/template.json", Body=body)
    s3.put_object(Bucket=bucket, Key="assets/voices.bin", Body=b"\0" * 1024)
    ecr = aws.client("ecr")
    for repository in SETTINGS.image_repositories:
        for tag in ("a" * 64, "b" * 64):
            manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                        "config": {"digest": f"sha256:{tag}", "size": 1, "mediaType": "application/json"},
                        "layers": []}
            ecr.put_image(repositoryName=repository, imageManifest=json.dumps(manifest), imageTag=tag)
    aws.client("logs").create_log_group(logGroupName=f"/aws/sagemaker/Endpoints/{SETTINGS.endpoint_name}")
    # Another deployment's endpoint whose name starts with ours: not this teardown's to delete.
    logs = aws.client("logs")
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):  # kept from an earlier test
        logs.create_log_group(logGroupName=OTHERS_LOG_GROUP)


def inventory(aws: boto3.Session) -> dict[str, list[str]]:
    sagemaker = aws.client("sagemaker")
    stacks = [s["StackName"] for s in aws.client("cloudformation").list_stacks()["StackSummaries"]
              if s["StackStatus"] != "DELETE_COMPLETE"]
    return {
        "stacks": sorted(stacks),
        "endpoints": [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]],
        "endpoint_configs": [c["EndpointConfigName"] for c in sagemaker.list_endpoint_configs()["EndpointConfigs"]],
        "models": [m["ModelName"] for m in sagemaker.list_models()["Models"]],
        "alarms": [a["AlarmName"] for a in aws.client("cloudwatch").describe_alarms()["MetricAlarms"]],
        "buckets": [b["Name"] for b in aws.client("s3").list_buckets()["Buckets"]],
        "repositories": sorted(r["repositoryName"] for r in aws.client("ecr").describe_repositories()["repositories"]),
        "log_groups": [g["logGroupName"] for g in aws.client("logs").describe_log_groups()["logGroups"]
                       if g["logGroupName"] != OTHERS_LOG_GROUP],
    }


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli(["teardown", "--region", REGION, *args])
    print(out.getvalue(), err.getvalue())
    return code, out.getvalue(), err.getvalue()


def test_dry_run_lists_everything_and_deletes_nothing_then_teardown_leaves_nothing(aws, tmp_path):
    deploy(aws, tmp_path)
    before = inventory(aws)
    assert before["stacks"] == sorted([SETTINGS.stack_name, SETTINGS.staging_stack_name])
    # (moto names the endpoint itself: it does not read EndpointName from a template)
    assert len(before["endpoints"]) == len(before["endpoint_configs"]) == len(before["models"]) == 1
    assert before["repositories"] == sorted(SETTINGS.image_repositories)

    code, out, _ = run_cli("--dry-run")
    assert code == 0
    assert "would delete" in out
    bucket = SETTINGS.staging_bucket_name("123456789012", REGION)
    for expected in (SETTINGS.stack_name, SETTINGS.staging_stack_name, "AWS::SageMaker::Endpoint",
                     "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Model", "AWS::SNS::Topic", "AWS::KMS::Key",
                     "AWS::IAM::Role",
                     f"{bucket}  (3 object versions)", *(f"{r}  (2 images)" for r in SETTINGS.image_repositories),
                     f"/aws/sagemaker/Endpoints/{SETTINGS.endpoint_name}"):
        assert expected in out, expected
    assert inventory(aws) == before, "a dry run deleted something"

    code, out, err = run_cli()  # no terminal here: refuses without --yes
    assert code == 2 and "--yes" in err
    assert inventory(aws) == before

    code, out, err = run_cli("--yes")
    assert code == 0, err
    assert "nothing left behind" in out
    assert inventory(aws) == {"stacks": [], "endpoints": [], "endpoint_configs": [], "models": [], "alarms": [],
                              "buckets": [], "repositories": [], "log_groups": []}

    code, out, _ = run_cli("--dry-run")
    assert code == 0 and "nothing of stack VoiceAgent" in out
    others = aws.client("logs").describe_log_groups(logGroupNamePrefix=OTHERS_LOG_GROUP)["logGroups"]
    assert [g["logGroupName"] for g in others] == [OTHERS_LOG_GROUP], "another endpoint's logs were deleted"


def test_an_interrupted_teardown_finds_the_retained_bucket_and_repositories_by_name(aws, tmp_path):
    deploy(aws, tmp_path)
    cfn = aws.client("cloudformation")
    for name in (SETTINGS.stack_name, SETTINGS.staging_stack_name):
        cfn.delete_stack(StackName=name)
    left = inventory(aws)
    assert left["stacks"] == []
    # The staging stack retains its bucket and repositories, as CloudFormation does.
    assert left["repositories"] == sorted(SETTINGS.image_repositories) and left["buckets"]

    code, out, err = run_cli("--yes")
    assert code == 0, err
    after = inventory(aws)
    assert (after["buckets"], after["repositories"], after["log_groups"]) == ([], [], [])


def test_without_credentials_the_teardown_says_so_and_deletes_nothing(aws, monkeypatch, tmp_path):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code, _, err = run_cli("--dry-run")
    assert code == 1
    assert "cannot list what exists" in err and "credentials" in err.lower()
