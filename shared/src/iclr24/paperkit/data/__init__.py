"""Shared loaders for datasets two or more packages use. Each imports its heavy dependency (scikit-learn,
scipy, Pillow) only when called; none imports torch. Arrays are numpy with documented dtypes and shapes."""

from .cifar import CIFAR10_CLASSES
from .cifar import load_cifar10
from .digits_shift import DigitsShift
from .digits_shift import digits_shift
from .imagefolder import image_folder
from .mnist import load_mnist

__all__ = ["load_mnist", "load_cifar10", "CIFAR10_CLASSES", "image_folder", "digits_shift", "DigitsShift"]
