"""Where this package's data comes from.

The tasks are generated (:mod:`.tasks`: Walsh cube, random kernel classification), so nothing is bundled. The real
images of the CNN claims are scikit-learn's 8x8 digits (``sklearn.datasets.load_digits``, always offline) and MNIST
through paperkit's data folder (``iclr24 data get mnist``, then ``iclr24.paperkit.data.load_mnist``); CIFAR-10,
the paper's own image set, is read from a path you give with ``iclr24.paperkit.data.load_cifar10``.
"""
