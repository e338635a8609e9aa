"""gpudeck's reference PyTorch trainer (`python -m trainer`); torch is imported only under this package."""
