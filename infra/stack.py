"""The deployed voice agent: the Kokoro TTS SageMaker endpoint and the AgentCore-hosted agent.

One stack holds both, named by ``InfraSettings.stack_name``. The container images and any file
assets are staged in ECR repositories and an S3 bucket that belong to this app alone (the app
staging synthesizer, see ``infra/app.py``), so the teardown can delete them without touching
another CDK app's assets.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.settings import IMAGE_ASSETS, InfraSettings

REPO_ROOT = Path(__file__).resolve().parents[1]
VARIANT = "AllTraffic"


class VoiceAgentStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, settings: InfraSettings, **kwargs) -> None:
        super().__init__(scope, construct_id, stack_name=settings.stack_name,
                         description="Streaming voice agent: Kokoro-82M TTS on SageMaker, a Strands agent on "
                                     "Bedrock AgentCore", **kwargs)
        self.settings = settings
        self.alarm_topic = self._alarm_topic()
        self.endpoint_name = settings.endpoint_name
        self._tts_endpoint()
        self._agent_runtime()
        self._alarms_and_dashboard()

    # --- TTS: image, model, endpoint configuration, endpoint, autoscaling --------------------------

    def _tts_endpoint(self) -> None:
        s = self.settings
        self.tts_image = ecr_assets.DockerImageAsset(
            self, "TtsImage", directory=str(REPO_ROOT), file="Dockerfile.tts",
            build_args=s.tts_build_args,
            platform=ecr_assets.Platform.LINUX_AMD64, asset_name=IMAGE_ASSETS[0])

        role = iam.Role(self, "TtsModelRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
                        description="Lets SageMaker pull the TTS image and write the endpoint's logs and metrics")
        self.tts_image.repository.grant_pull(role)
        role.add_to_policy(iam.PolicyStatement(
            actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            resources=[self.format_arn(service="logs", resource="log-group",
                                       resource_name=f"/aws/sagemaker/Endpoints/{self.endpoint_name}:*",
                                       arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)]))
        role.add_to_policy(iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}}))

        environment = {"VOICE_AGENT_LOG_LEVEL": "INFO"}
        if s.default_voice:
            environment["VOICE_AGENT_DEFAULT_VOICE"] = s.default_voice
        model = sagemaker.CfnModel(
            self, "TtsModel", execution_role_arn=role.role_arn,
            # The model is baked into the image: the container needs no network at all.
            enable_network_isolation=True,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=self.tts_image.image_uri, environment=environment))
        # The image pull permission must exist before SageMaker creates the endpoint from this model.
        model.node.add_dependency(role.node.find_child("DefaultPolicy"))

        config = sagemaker.CfnEndpointConfig(
            self, "TtsEndpointConfig",
            production_variants=[sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                variant_name=VARIANT, model_name=model.attr_model_name,
                initial_instance_count=s.tts_min_instances, instance_type=s.tts_instance_type,
                initial_variant_weight=1.0,
                container_startup_health_check_timeout_in_seconds=600)])
        endpoint = sagemaker.CfnEndpoint(self, "TtsEndpoint", endpoint_name=self.endpoint_name,
                                         endpoint_config_name=config.attr_endpoint_config_name)
        self.tts_endpoint = endpoint
        self.tts_endpoint_arn = self.format_arn(service="sagemaker", resource="endpoint",
                                                # SageMaker ARNs carry the name in lower case.
                                                resource_name=self.endpoint_name.lower())

        self._tts_scaling(endpoint)

        acknowledge(role, "ecr:GetAuthorizationToken and cloudwatch:PutMetricData support no resource-level "
                           "permissions (the metric namespace is restricted by a condition)",
                     "AwsSolutions-IAM5[Resource::*]")
        acknowledge(role, "log streams are created at run time inside this endpoint's own log group",
                     f"AwsSolutions-IAM5[Resource::{self._finding_arn('logs')}:log-group:/aws/sagemaker/Endpoints/{self.endpoint_name}:*]")
        acknowledge(config, "GPU instances (ml.g5) have NVMe instance storage, which SageMaker encrypts itself and for "
                             "which it rejects a KmsKeyId; the endpoint stores no customer data", "AwsSolutions-SM2")
        acknowledge(model, "network isolation is on: the container has no network, so there is no VPC to place it "
                            "in; it is reached only through the SageMaker runtime API with SigV4", "AwsSolutions-SM1")

    def _tts_scaling(self, endpoint: sagemaker.CfnEndpoint) -> None:
        """Target tracking on concurrent sessions per instance, between the configured bounds."""
        s = self.settings
        target = autoscaling.ScalableTarget(
            self, "TtsScaling", service_namespace=autoscaling.ServiceNamespace.SAGEMAKER,
            resource_id=f"endpoint/{self.endpoint_name}/variant/{VARIANT}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=s.tts_min_instances, max_capacity=s.tts_max_instances)
        target.node.add_dependency(endpoint)
        target.scale_to_track_metric(
            "SessionsPerInstance", target_value=float(s.tts_sessions_per_instance),
            predefined_metric=autoscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION,
            scale_in_cooldown=cdk.Duration.minutes(10), scale_out_cooldown=cdk.Duration.minutes(2))

    # --- The agent: AgentCore Runtime and its endpoint ---------------------------------------------

    def _agent_runtime(self) -> None:
        s = self.settings
        environment = {
            "VOICE_AGENT_MODEL": "bedrock",
            "BEDROCK_MODEL_ID": s.bedrock_model_id,
            "SAGEMAKER_ENDPOINT_NAME": self.endpoint_name,
            "SAGEMAKER_REGION": self.region,
        }
        if s.default_voice:
            environment["VOICE_AGENT_VOICE"] = s.default_voice
        self.runtime = agentcore.Runtime(
            self, "Agent", runtime_name=s.runtime_name,
            description="Strands voice agent: Bedrock tokens -> sentences -> Kokoro audio events",
            agent_runtime_artifact=agentcore.AgentRuntimeArtifact.from_asset(
                str(REPO_ROOT), file="Dockerfile.agent", platform=ecr_assets.Platform.LINUX_ARM64,
                asset_name=IMAGE_ASSETS[1]),
            environment_variables=environment, protocol_configuration=agentcore.ProtocolType.HTTP,
            tracing_enabled=True)
        self.runtime.node.add_dependency(self.tts_endpoint)
        self.runtime_endpoint = self.runtime.add_endpoint("live", description="The voice agent")

        self.runtime.add_to_role_policy(iam.PolicyStatement(
            actions=["sagemaker:InvokeEndpointWithBidirectionalStream"], resources=[self.tts_endpoint_arn]))
        self.runtime.add_to_role_policy(iam.PolicyStatement(
            actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
            resources=self._bedrock_model_arns()))
        logs = self._finding_arn("logs")
        acknowledge(
            self.runtime,
            "granted by the AgentCore Runtime construct for the runtime's own logs, traces and workload identity: "
            "ecr:GetAuthorizationToken, X-Ray and CloudWatch metric writes (namespace restricted by a condition) "
            "support no resource-level permissions; log names carry the runtime id, which exists only after "
            "creation",
            "AwsSolutions-IAM5[Resource::*]",
            f"AwsSolutions-IAM5[Resource::{logs}:log-group:/aws/bedrock-agentcore/runtimes/*]",
            f"AwsSolutions-IAM5[Resource::{logs}:log-group:*]",
            f"AwsSolutions-IAM5[Resource::{logs}:log-group:/aws/bedrock-agentcore/runtimes/*:log-stream:*]",
            f"AwsSolutions-IAM5[Resource::{self._finding_arn('bedrock-agentcore')}:"
            "workload-identity-directory/default/workload-identity/*]")
        if s.is_inference_profile:
            acknowledge(self.runtime, "a cross-region inference profile routes each request to the model in any of "
                                       "its regions: the ARN names the model, only the region is open",
                         "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/"
                         f"{s.foundation_model_id}]")

    def _finding_arn(self, service: str) -> str:
        """An ARN prefix of this stack as cdk-nag writes it in a finding: the region and account as
        ``<AWS::Region>``/``<AWS::AccountId>`` when the stack is environment-agnostic, as their values
        when the CDK CLI (or the environment) fixed them."""
        region = "<AWS::Region>" if cdk.Token.is_unresolved(self.region) else self.region
        account = "<AWS::AccountId>" if cdk.Token.is_unresolved(self.account) else self.account
        return f"arn:<AWS::Partition>:{service}:{region}:{account}"

    def _bedrock_model_arns(self) -> list[str]:
        s = self.settings
        if not s.is_inference_profile:
            return [self.format_arn(service="bedrock", account="", resource="foundation-model",
                                    resource_name=s.foundation_model_id)]
        return [
            self.format_arn(service="bedrock", resource="inference-profile", resource_name=s.bedrock_model_id),
            self.format_arn(service="bedrock", region="*", account="", resource="foundation-model",
                            resource_name=s.foundation_model_id),
        ]

    # --- Alarms and a dashboard --------------------------------------------------------------------

    def _alarm_topic(self) -> sns.Topic:
        """The topic every alarm notifies. It is encrypted with a key of this stack: CloudWatch cannot
        publish to a topic under the AWS-managed ``aws/sns`` key (its policy cannot grant CloudWatch),
        so the alarms would fire silently."""
        alarms = self.format_arn(service="cloudwatch", resource="alarm", resource_name=f"{self.settings.stack_name}-*",
                                 arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)
        from_our_alarms = {"ArnLike": {"aws:SourceArn": alarms}, "StringEquals": {"aws:SourceAccount": self.account}}
        key = kms.Key(self, "AlarmsKey", description=f"{self.settings.stack_name}: encrypts the alarm topic",
                      enable_key_rotation=True, removal_policy=cdk.RemovalPolicy.DESTROY,
                      pending_window=cdk.Duration.days(7))
        key.add_to_resource_policy(iam.PolicyStatement(
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"], conditions=from_our_alarms))
        topic = sns.Topic(self, "Alarms", display_name=f"{self.settings.stack_name} alarms", enforce_ssl=True,
                          master_key=key)
        # The topic policy (it exists for enforce_ssl) replaces SNS's default one: allow our alarms.
        topic.add_to_resource_policy(iam.PolicyStatement(
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")], actions=["sns:Publish"],
            resources=[topic.topic_arn], conditions=from_our_alarms))
        if self.settings.alarm_email:
            topic.add_subscription(subscriptions.EmailSubscription(self.settings.alarm_email))
        return topic

    def _tts_metric(self, name: str, statistic: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(namespace="AWS/SageMaker", metric_name=name, statistic=statistic,
                                 period=cdk.Duration.minutes(1),
                                 dimensions_map={"EndpointName": self.endpoint_name, "VariantName": VARIANT})

    def _alarms_and_dashboard(self) -> None:
        s = self.settings
        one_minute = cdk.Duration.minutes(1)
        agent_latency = self.runtime.metric_latency(statistic="p90", period=one_minute)
        agent_errors = self.runtime.metric_system_errors(statistic="Sum", period=one_minute)
        agent_user_errors = self.runtime.metric_user_errors(statistic="Sum", period=one_minute)
        agent_throttles = self.runtime.metric_throttles(statistic="Sum", period=one_minute)
        tts_errors = self._tts_metric("Invocation5XXErrors", "Sum")
        tts_model_errors = self._tts_metric("InvocationModelErrors", "Sum")
        tts_latency = self._tts_metric("ModelLatency", "p90")
        tts_sessions = self._tts_metric("ConcurrentRequestsPerModel", "Maximum")

        alarms = [
            ("AgentLatency", agent_latency, s.agent_latency_alarm_ms, 3,
             f"Agent p90 invocation latency above {s.agent_latency_alarm_ms} ms for 3 minutes"),
            ("AgentErrors", agent_errors, 1, 1, "The agent runtime reported system errors"),
            ("AgentThrottles", agent_throttles, 1, 1, "Invocations of the agent runtime were throttled"),
            ("TtsErrors", tts_errors, 1, 1, "The TTS endpoint returned 5XX errors"),
            ("TtsModelErrors", tts_model_errors, 1, 1, "The TTS container failed requests"),
            ("TtsSessionsHigh", tts_sessions, s.tts_sessions_per_instance * 2, 3,
             "A TTS instance holds twice the target sessions for 3 minutes: it will start refusing"),
        ]
        self.alarms: list[cloudwatch.Alarm] = []
        for name, metric, threshold, periods, description in alarms:
            alarm = cloudwatch.Alarm(
                self, f"{name}Alarm", alarm_name=f"{s.stack_name}-{name}", alarm_description=description,
                metric=metric, threshold=threshold, evaluation_periods=periods,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING)
            alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.alarm_topic))
            alarm.add_ok_action(cloudwatch_actions.SnsAction(self.alarm_topic))
            self.alarms.append(alarm)

        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=s.stack_name)
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Agent latency p90 (ms)", left=[agent_latency], width=12),
            cloudwatch.GraphWidget(title="Agent errors and throttles", width=12,
                                   left=[agent_errors, agent_user_errors, agent_throttles]),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title="TTS model latency p90", left=[tts_latency], width=8),
            cloudwatch.GraphWidget(title="TTS errors", left=[tts_errors, tts_model_errors], width=8),
            cloudwatch.GraphWidget(title="TTS concurrent sessions per instance", left=[tts_sessions], width=8),
        )
        self.dashboard = dashboard

        cdk.CfnOutput(self, "TtsEndpointName", value=self.endpoint_name)
        cdk.CfnOutput(self, "AgentRuntimeArn", value=self.runtime.agent_runtime_arn)
        cdk.CfnOutput(self, "AgentRuntimeEndpointName", value="live")
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.alarm_topic.topic_arn)


def acknowledge(construct: Construct, reason: str, *findings: str) -> None:
    """Accept specific cdk-nag AWS Solutions findings on a construct and its children, with the reason
    in the code. A finding is a rule id, or a rule id and the one wildcard it accepts: the same
    rule on another resource still fails the synth."""
    for finding in findings:
        cdk.Validations.of(construct).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions::{finding}", reason=reason))
