"""RLCF: test-time adaptation of a CLIP policy with the CLIP reward of a frozen, stronger CLIP (Zhao et al., ICLR 2024)."""

from .data import DIGIT_NAMES
from .data import DIGIT_TEMPLATE
from .data import class_prompts
from .data import digits_recipe
from .data import load_image_folder
from .experiments import DemoConfig
from .experiments import run_demo_seed
from .experiments import toy_tokenizer
from .experiments import train_digit_clips
from .losses import average_entropy
from .losses import distillation_loss
from .losses import policy_gradient_loss
from .losses import sample_top_k
from .losses import select_confident
from .model import ToyCLIPConfig
from .model import load_clip
from .model import tokenize
from .model import train_toy_clip
from .prompt import PromptLearner
from .retrieval import RetrievalTTA
from .retrieval import recall_at_k
from .reward import CLIPReward
from .reward import clip_score
from .reward import rewards_post_process
from .tta import IMAGE_DEFAULTS
from .tta import PROMPT_DEFAULTS
from .tta import TTAConfig
from .tta import TTARunner
from .views import clip_views
from .views import digit_views

__all__ = [
    "CLIPReward",
    "DIGIT_NAMES",
    "DIGIT_TEMPLATE",
    "DemoConfig",
    "IMAGE_DEFAULTS",
    "PROMPT_DEFAULTS",
    "PromptLearner",
    "RetrievalTTA",
    "TTAConfig",
    "TTARunner",
    "ToyCLIP",
    "ToyCLIPConfig",
    "average_entropy",
    "build_toy_clip",
    "class_prompts",
    "clip_score",
    "clip_views",
    "digit_views",
    "digits_recipe",
    "distillation_loss",
    "load_clip",
    "load_image_folder",
    "policy_gradient_loss",
    "recall_at_k",
    "rewards_post_process",
    "run_demo_seed",
    "sample_top_k",
    "select_confident",
    "tokenize",
    "toy_tokenizer",
    "train_digit_clips",
    "train_toy_clip",
]


def __getattr__(name: str):
    if name in (
        "ToyCLIP",
        "build_toy_clip",
    ):  # on first use: ToyCLIP subclasses open_clip's CLIP (seconds to import)
        from . import toyclip

        return getattr(toyclip, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
